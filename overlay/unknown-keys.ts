/**
 * Options objects are checked for names they do not know: a misspelt option
 * (`probeBytez`) would otherwise be ignored without a word and its default used.
 */

/** The first own key of `value` that is not in `known`, if any. */
export function unknownKey (value: object, known: Iterable<string>): string | undefined {
  const names = known instanceof Set ? known as ReadonlySet<string> : new Set(known)
  for (const key of Object.keys(value)) if (!names.has(key)) return key
  return undefined
}
