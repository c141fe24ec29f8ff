package amp

import "testing"

// TestItemBudgetRefusesManySmallArrays: a map of many arrays, each within
// the per-array cap, is refused once the whole item holds more than
// MaxItems items (threat: 16 MiB of zeros in 250 arrays, 16 million items,
// every later pass over the message paying for each of them).
func TestItemBudgetRefusesManySmallArrays(t *testing.T) {
	build := func(arrays, each int) []byte {
		out := []byte{0xb8, byte(arrays)}
		for i := 0; i < arrays; i++ {
			out = append(out, 0x62, 'k', byte('a'+i))
			out = append(out, 0x99, byte(each>>8), byte(each))
			out = append(out, make([]byte, each)...)
		}
		return out
	}
	cases := []struct {
		name     string
		data     []byte
		maxItems int
		ok       bool
	}{
		// 1 map + 4 keys + 4 arrays + 4*1000 zeros = 4009 items.
		{"at the budget", build(4, 1000), 4009, true},
		{"one item over", build(4, 1000), 4008, false},
		{"default budget, 20 arrays of 60,000", build(20, 60000), 0, false},
		{"default budget, 16 arrays of 60,000", build(16, 60000), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Limits{MaxItems: tc.maxItems}.Canonical(tc.data)
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && NameOf(err) != "limit_exceeded" {
				t.Fatalf("got %v, want limit_exceeded", err)
			}
		})
	}
}
