package stack

import "testing"

// The CFA expression of PLT entries (the one perf and libunwind special-
// case): rsp+8, plus 8 more past the push in the entry's second half.
func TestPLTExpression(t *testing.T) {
	expr := []byte{
		0x77, 0x08, // DW_OP_breg7 (rsp) 8
		0x80, 0x00, // DW_OP_breg16 (rip) 0
		0x3f, // DW_OP_lit15
		0x1a, // DW_OP_and
		0x3b, // DW_OP_lit11
		0x2a, // DW_OP_ge
		0x33, // DW_OP_lit3
		0x24, // DW_OP_shl
		0x22, // DW_OP_plus
	}
	w := &window{base: 0x1000, data: make([]byte, 64)}
	for _, tc := range []struct{ rip, want uint64 }{
		{0x4020, 0x1008}, {0x402a, 0x1008}, {0x402b, 0x1010}, {0x402f, 0x1010},
	} {
		rs := regsOf(Regs{IP: tc.rip, SP: 0x1000})
		got, err := evalExpr(expr, &rs, 0, false, w)
		if err != nil || got != tc.want {
			t.Errorf("rip %#x: CFA %#x, %v; want %#x", tc.rip, got, err, tc.want)
		}
	}
}

func TestDemangle(t *testing.T) {
	for in, want := range map[string]string{
		"_ZN3std2fs11OpenOptions5_open17h4fc94ffc41092d48E":                             "std::fs::OpenOptions::_open",
		"_ZN4copy12check_sparse17hc12bbf2d596c78fdE":                                    "copy::check_sparse",
		"_ZN47_$LT$std..fs..File$u20$as$u20$std..io..Read$GT$4read17h0123456789abcdefE": "<std::fs::File as std::io::Read>::read",
		"_RNvCs4cAFXWjnUVG_4copy12check_sparse":                                         "copy::check_sparse",
		"_ZN3foo3barEv":                                                                 "foo::bar",
		"main":                                                                          "main",
	} {
		if got := demangleName(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
