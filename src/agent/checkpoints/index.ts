export { type CheckpointRecorder, createCheckpointRecorder } from './recorder.ts';
export {
  ForkedEarlierError,
  planRestore,
  planUndo,
  RestoreError,
  type RestoreItem,
  type RestorePlan,
} from './restore.ts';
export { type AppliedItem, applyRestore, type RestoreResult } from './restoreApply.ts';
export { checkpointStats, DEFAULT_CHECKPOINT_BUDGET_BYTES, pruneCheckpoints } from './stats.ts';
