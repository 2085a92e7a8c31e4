// Reductions over a workgroup for the row kernels (layer_norm, rms_norm, l2_normalize, softmax):
// the subgroup operation, then one shared slot per subgroup combined in a fixed order, so the
// result is the same on every invocation and does not depend on the subgroup size. The includer
// declares WG (the workgroup size, which bounds the subgroup count) before the #include and calls
// these from uniform control flow: they contain barriers.
shared float partial[WG];

float workgroup_sum(float v) {
  v = subgroupAdd(v);
  if (subgroupElect()) partial[gl_SubgroupID] = v;
  barrier();
  float total = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) total += partial[i];
  barrier();  // the slots are reused by the next reduction
  return total;
}

float workgroup_max(float v) {
  v = subgroupMax(v);
  if (subgroupElect()) partial[gl_SubgroupID] = v;
  barrier();
  float m = partial[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) m = max(m, partial[i]);
  barrier();
  return m;
}
