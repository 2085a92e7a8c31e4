// n / d for n < 2^31 with d's (magic, shift) from the host's fast_divisor (gpu/ops/fast_divide.h):
// a multiply-high, an add and a shift where a run-time division costs about twenty instructions.
uint fast_divide(uint n, uint magic, uint shift) {
  uint hi, lo;
  umulExtended(n, magic, hi, lo);
  return (hi + n) >> shift;
}
