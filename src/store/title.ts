/** A conversation's default title, made from its first question. */

/** Words of the first question that make a conversation's title. */
const TITLE_WORDS = 6;

/** A conversation's title: the first words of its first question. */
export function titleOf(user: string): string {
  return user.trim().split(/\s+/).slice(0, TITLE_WORDS).join(" ");
}
