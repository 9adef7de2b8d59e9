


def _module_reference(module: AMCL, h1, h2) -> float:
    """The 2N layout built anchor by anchor, with τ from single-pair calls (float64)."""
    n = h1.shape[0]
    z = _unit(torch.cat([module.projector(h1), module.projector(h2)], 1))
    heads, two_n, _ = z.shape
    pos = torch.empty(heads, two_n, dtype=z.dtype)
    tp = torch.empty_like(pos)
    neg = torch.empty(heads, two_n, two_n - 2, dtype=z.dtype)
    tn = torch.empty_like(neg)
    for c in range(heads):
        for i in range(two_n):
            j = (i + n) % two_n
            pos[c, i] = z[c, i] @ z[c, j]
            tp[c, i] = module.adaptive_temperature(z[c, i], z[c, j])
            others = [k for k in range(two_n) if k not in (i, j)]
            for col, k in enumerate(others):
                neg[c, i, col] = z[c, i] @ z[c, k]
                tn[c, i, col] = module.adaptive_temperature(z[c, i], z[c, k])
    return contrast_ref(
        pos, neg, tp, tn, module.out_dim, module.beta, module.negatives, module.kappa,
        module.base == "infonce",
    )


def test_module_simsiam_matches_eq_2_2():
    torch.manual_seed(1)
    module = AMCL(in_dim=10, base="simsiam", heads=2, out_dim=8, beta=0.5, lower=0.05).double()
    h1, h2 = torch.randn(4, 10, dtype=torch.float64), torch.randn(4, 10, dtype=torch.float64)
    with torch.no_grad():
        got = module(h1, h2).item()
        z1, z2 = module.projector(h1), module.projector(h2)
        p1, p2 = module.predictor(z1), module.predictor(z2)
        cos = torch.nn.functional.cosine_similarity
        want = 0.0
        for c in range(2):
            for i in range(4):
                for p, t in ((p1[c, i], z2[c, i]), (p2[c, i], z1[c, i])):
                    tau = module.adaptive_temperature(_unit(p), _unit(t)).item()
                    want += -cos(p, t, dim=0).item() / (2 * tau) + 0.5 * omega_ref(tau, 8)
    assert got == pytest.approx(want / 4, rel=1e-9)
