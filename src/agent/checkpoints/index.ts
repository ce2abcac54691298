export { type CheckpointRecorder, createCheckpointRecorder } from './recorder.ts';
export {
  type AppliedItem,
  applyRestore,
  ForkedEarlierError,
  planRestore,
  planUndo,
  RestoreError,
  type RestoreItem,
  type RestorePlan,
  type RestoreResult,
} from './restore.ts';
export { checkpointStats, DEFAULT_CHECKPOINT_BUDGET_BYTES, pruneCheckpoints } from './stats.ts';
