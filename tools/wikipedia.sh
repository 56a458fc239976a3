#!/usr/bin/env bash
# The summary of a Wikipedia article, from the REST API (no key).
# Usage: wikipedia.sh TOPIC [LANGUAGE]
# WIKIPEDIA_URL points it at another server (tests use a local one).
set -euo pipefail

for tool in curl jq; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "wikipedia: $tool is not installed; install curl and jq to use this tool" >&2
    exit 2
  fi
done

topic=${1:-}
language=${2:-}
language=${language:-en}
if [[ -z ${topic//[[:space:]]/} ]]; then
  echo "wikipedia: no topic given; pass an article title" >&2
  exit 2
fi
# The language becomes part of a host name: accept only what a code looks like.
if [[ ! $language =~ ^[a-z]{2,3}(-[a-z]{2,8})*$ ]]; then
  echo "wikipedia: \"$language\" is not a Wikipedia language code; use one like en, it, de" >&2
  exit 2
fi

# Article titles use underscores for spaces.
title=${topic#"${topic%%[![:space:]]*}"}
title=${title%"${title##*[![:space:]]}"}
title=${title// /_}
encoded=$(jq -rn --arg v "$title" '$v|@uri')
base=${WIKIPEDIA_URL:-https://$language.wikipedia.org}
agent="desktop-assistant/0.1 (local desktop assistant; wikipedia tool)"

if ! summary=$(curl -fsS --max-time 10 -A "$agent" "$base/api/rest_v1/page/summary/$encoded?redirect=true"); then
  echo "wikipedia: no summary of \"$topic\" on $language.wikipedia.org (no such article, or the site is unreachable)" >&2
  exit 1
fi

jq -r '
  "\(.title)\(if .description then " (\(.description))" else "" end)",
  "",
  (.extract // "(no summary text)"),
  (if .type == "disambiguation" then "\n(This is a disambiguation page: ask about a more specific topic.)" else empty end),
  "",
  "Source: \(.content_urls.desktop.page // "Wikipedia")"
' <<<"$summary"
