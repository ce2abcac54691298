// pass@k and pass^k over n valid trials with c passes (infrastructure errors are not trials).
// pass@k = 1 − C(n−c, k) / C(n, k): the chance that at least one of k trials drawn without
// replacement passes (the unbiased estimator of Chen et al., 2021). pass^k = C(c, k) / C(n, k): the
// chance that all k pass. Both as products, so large n never overflows. Undefined (null) for k > n.

export function passAtK(n: number, c: number, k: number): number | null {
  if (k < 1 || k > n || c < 0 || c > n) return null;
  if (n - c < k) return 1;
  let allFail = 1;
  for (let i = n - c + 1; i <= n; i++) allFail *= 1 - k / i;
  return 1 - allFail;
}

export function passHatK(n: number, c: number, k: number): number | null {
  if (k < 1 || k > n || c < 0 || c > n) return null;
  if (c < k) return 0;
  let all = 1;
  for (let i = 0; i < k; i++) all *= (c - i) / (n - i);
  return all;
}

/** Rounded for reports (the exact value stays derivable from `trials`/`passed`). */
export function round(x: number | null, digits = 6): number | null {
  if (x === null) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
