/** Placeholder until the module lands. */
export function printFlags(_args: string[]): Promise<number> {
  return Promise.resolve(1);
}
/** Placeholder until the module lands. */
export function launch(_args: string[]): Promise<number> {
  return Promise.resolve(1);
}
