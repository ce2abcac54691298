// picomatch 2 ships no typings; scoped.ts uses one call of it.
declare module 'picomatch' {
  interface PicomatchOptions {
    readonly dot?: boolean;
    /** Patterns without a slash match the basename of a path that has slashes (`*.ts`). */
    readonly basename?: boolean;
  }
  function picomatch(glob: string | readonly string[], options?: PicomatchOptions): (test: string) => boolean;
  export default picomatch;
}
