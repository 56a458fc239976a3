/** Placeholder until the module lands. */
export function runChat(_args: string[]): Promise<number> {
  return Promise.resolve(1);
}
