"""The coefficients of the erfinv lowering (math_kinds.py's erfinv-lower), written by
`scripts/fit_erfinv.py` (its output pasted here; do not edit by hand).

erfinv(x) = x P(t), w = -log((1 - x)(1 + x)) (exact near +-1: 1 - x and 1 + x are), in three pieces
at the split points of Giles' double-precision approximation ("Approximating the erfinv function",
GPU Computing Gems, 2011), each a least-squares fit in relative error against mpmath's erfinv:
- w < 6.25: t = (w - 3.125) / 4, P = ERFINV_P1 (degree 20, relative error 5.1e-15);
- 6.25 <= w < 16: t = sqrt(w) - 3.25, P = ERFINV_P2 (degree 18, relative error 1.1e-15);
- w >= 16 (float64 only: within 1e-7 of +-1; w is 36.7 at 1 - 2^-53): t = sqrt(w) - 5, P = ERFINV_P3
  (degree 16, relative error 5.3e-14).
So the lowering is accurate in float64 too (unlike the erf and atan fits, approximations.py), to
36 eps(f64) measured at the checker's points (the checker's bound takes that measured error).
Coefficients highest degree first (Horner's order).
"""

ERFINV_SPLITS: tuple[float, float] = (6.25, 16.0)
ERFINV_P1: tuple[float, ...] = (1.3427871837878326e-06, 6.988887238934538e-07, -9.289707332891681e-06, 3.6030284430706485e-06, 2.882415320284469e-05, -4.602021231632017e-05, -2.2163300779243127e-05, 0.00017789879883045674, -0.0002175506527926435, -0.0002274848565834659, 0.0011022368520317754, -0.0010780380319063431, -0.001905149057703469, 0.006938269123585644, -0.0055929624964098515, -0.014215703482673828, 0.04780395728863716, -0.047404962199060235, -0.09653873394347473, 0.9606327297024593, 1.6536545626831045)
ERFINV_P2: tuple[float, ...] = (-3.991007386620018e-09, 8.953937902234088e-08, -2.623224726996016e-07, 2.089814774386273e-08, 1.4927081326513897e-06, -4.016220722614393e-06, 2.926788279500428e-06, 1.2476387067044027e-05, -4.7318415894357103e-05, 6.828457549991041e-05, 2.403094114152179e-05, -0.00035503748183338574, 0.0009532894216600845, -0.0016882755587885531, 0.0024914420929920533, -0.003751208507476537, 0.0053709145536088194, 1.0052589676941572, 3.083885610492222)
ERFINV_P3: tuple[float, ...] = (6.962568022184028e-12, -2.558582790079811e-10, 1.373692144920617e-09, -3.7921104648172935e-09, 7.828465195419666e-09, -1.4949883193499556e-08, 2.897330495701061e-08, -6.772481549394898e-08, 2.2908343770598524e-07, -9.929754167730982e-07, 4.5260436196247625e-06, -1.968178001534356e-05, 7.599527923161474e-05, -0.00021503011910497445, -0.00013871931842370763, 1.01030046486453, 4.849906401408584)

# Measured max relative error of the lowering evaluated in each dtype (every op rounded to it) on the
# checker's domain (`python -m egraph_lower.rules.check --rule erfinv-lower`); the checker's bound uses it.
ERFINV_MAX_REL_ERROR: dict[str, float] = {"f64": 8.1e-15, "f32": 1.06e-07, "f16": 0.00099, "bf16": 0.0089}
