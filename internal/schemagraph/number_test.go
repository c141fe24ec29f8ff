package schemagraph

import "testing"

func TestNumberSyntax(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "10": true, "1.5": true, "1e5": true, "1E+5": true, "-1.5e-5": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "+1": false,
		"0x1": false, "Inf": false, "NaN": false, "1_0": false, "1.5e+": false, " 1": false,
	} {
		if got := NumberSyntax(s); got != want {
			t.Errorf("NumberSyntax(%q) = %v", s, got)
		}
	}
}
