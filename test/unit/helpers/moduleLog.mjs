// `node --import ./moduleLog.mjs …`: appends every module URL the process resolves to
// $KEEL_MODULE_LOG (one per line), so a test can tell which packages a run really loaded.
import { register } from 'node:module';

register('./moduleLogHooks.mjs', import.meta.url);
