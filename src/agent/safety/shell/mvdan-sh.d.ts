// mvdan-sh ships no typings; shellParse.ts narrows `syntax` to the few functions it uses.
declare module 'mvdan-sh' {
  const sh: { readonly syntax: unknown };
  export default sh;
}
