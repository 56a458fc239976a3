/** Placeholder until the module lands. */
export function runAsk(_args: string[]): Promise<number> {
  return Promise.resolve(1);
}
