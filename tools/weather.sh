#!/usr/bin/env bash
# Current weather and today's forecast for a place, from Open-Meteo (no key).
# Usage: weather.sh PLACE
# OPEN_METEO_GEOCODING_URL and OPEN_METEO_FORECAST_URL point it at another
# server (tests use a local one).
set -euo pipefail

for tool in curl jq; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "weather: $tool is not installed; install curl and jq to use this tool" >&2
    exit 2
  fi
done

place=${1:-}
if [[ -z ${place//[[:space:]]/} ]]; then
  echo "weather: no place given; pass a city or place name" >&2
  exit 2
fi

geocoding=${OPEN_METEO_GEOCODING_URL:-https://geocoding-api.open-meteo.com/v1/search}
forecast=${OPEN_METEO_FORECAST_URL:-https://api.open-meteo.com/v1/forecast}

# "Springfield, Illinois": search the name, prefer a match on the qualifier.
name=${place%%,*}
qualifier=""
if [[ $place == *,* ]]; then
  qualifier=${place#*,}
  qualifier=${qualifier#"${qualifier%%[![:space:]]*}"}
fi
encoded=$(jq -rn --arg v "$name" '$v|@uri')

if ! found=$(curl -fsS --max-time 10 "$geocoding?name=$encoded&count=10&language=en&format=json"); then
  echo "weather: no answer from the Open-Meteo geocoding service (offline, or the service failed)" >&2
  exit 1
fi

location=$(jq -c --arg q "$qualifier" '
  (.results // []) as $all
  | ($all | map(select($q != "" and (
      ((.admin1 // "") | ascii_downcase | contains($q | ascii_downcase)) or
      ((.country // "") | ascii_downcase | contains($q | ascii_downcase)) or
      ((.country_code // "") | ascii_downcase) == ($q | ascii_downcase)
    )))) as $matching
  | ($matching[0] // $all[0]) // empty
' <<<"$found")
if [[ -z $location ]]; then
  echo "weather: no place called \"$place\" was found" >&2
  exit 1
fi

latitude=$(jq -r '.latitude' <<<"$location")
longitude=$(jq -r '.longitude' <<<"$location")
query="latitude=$latitude&longitude=$longitude&timezone=auto&forecast_days=1"
query+="&current=temperature_2m,apparent_temperature,relative_humidity_2m,precipitation,weather_code,wind_speed_10m,wind_direction_10m"
query+="&daily=weather_code,temperature_2m_max,temperature_2m_min,precipitation_sum,precipitation_probability_max,sunrise,sunset"

if ! weather=$(curl -fsS --max-time 10 "$forecast?$query"); then
  echo "weather: no answer from the Open-Meteo forecast service (offline, or the service failed)" >&2
  exit 1
fi

jq -r --argjson place "$location" '
  def sky:
    {"0": "clear sky", "1": "mainly clear", "2": "partly cloudy", "3": "overcast",
     "45": "fog", "48": "depositing rime fog",
     "51": "light drizzle", "53": "drizzle", "55": "dense drizzle",
     "56": "light freezing drizzle", "57": "dense freezing drizzle",
     "61": "light rain", "63": "rain", "65": "heavy rain",
     "66": "light freezing rain", "67": "heavy freezing rain",
     "71": "light snow", "73": "snow", "75": "heavy snow", "77": "snow grains",
     "80": "light rain showers", "81": "rain showers", "82": "violent rain showers",
     "85": "light snow showers", "86": "heavy snow showers",
     "95": "thunderstorm", "96": "thunderstorm with light hail",
     "99": "thunderstorm with heavy hail"}[tostring] // "weather code \(.)";
  def compass:
    ["N", "NE", "E", "SE", "S", "SW", "W", "NW"][((. + 22.5) / 45 | floor) % 8];
  def clock: if . == null then "?" else split("T")[1] // . end;
  .current as $c | .current_units as $cu | .daily as $d | .daily_units as $du
  | ([$place.name, $place.admin1, $place.country] | map(select(. != null and . != "")) | reduce .[] as $x ([]; if any(.[]; . == $x) then . else . + [$x] end) | join(", ")) as $where
  | "Weather for \($where) (\($place.latitude), \($place.longitude)), local time \($c.time | sub("T"; " ")) (\(.timezone)):",
    "Now: \($c.temperature_2m) \($cu.temperature_2m) (feels like \($c.apparent_temperature) \($cu.apparent_temperature)), \($c.weather_code | sky), humidity \($c.relative_humidity_2m) \($cu.relative_humidity_2m), wind \($c.wind_speed_10m) \($cu.wind_speed_10m) from \($c.wind_direction_10m | compass), precipitation \($c.precipitation) \($cu.precipitation)",
    "Today: \($d.temperature_2m_min[0]) to \($d.temperature_2m_max[0]) \($du.temperature_2m_max), \($d.weather_code[0] | sky), precipitation \($d.precipitation_sum[0]) \($du.precipitation_sum) (chance \($d.precipitation_probability_max[0] // "?") \($du.precipitation_probability_max // "%")), sunrise \($d.sunrise[0] | clock), sunset \($d.sunset[0] | clock)"
' <<<"$weather"
