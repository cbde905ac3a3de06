"""What the A/B scripts of bench/ (exec_ab.sh, layers_ab.sh, write_ab.sh) share: the
percentile they report, interpolated between the two nearest ranks, as numpy's default."""


def pct(v, p):
    v = sorted(v)
    k = (len(v) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)
