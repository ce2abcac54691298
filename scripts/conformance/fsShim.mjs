// The conformance bundle imports `globSync` from 'fs' (Node >= 22) for its results browser only,
// which client runs never use; on older Node this module stands in for 'fs' inside that bundle.
import fs from 'node:fs';

export * from 'node:fs';
export default fs;
export function globSync() {
  return [];
}
