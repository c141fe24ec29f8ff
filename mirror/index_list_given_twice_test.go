package mirror

import (
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestIndexListGivenTwiceKeepsOnlyItsLastAndEachIsChecked: a hostile
// mirror gives a list member of its index twice (JSON does not forbid
// it), the second with the same entry again or with a bad one. The
// bundles, statements and heartbeats lists (decodeList,
// mirror/index.go) each read the member every time it is given and keep
// only the last, as encoding/json keeps the last value of any other
// member: never the entries of both (which would list a bundle, a
// statement or a line twice past the per-list checks of repeats), and a
// bad entry in either is refused, bad_index.
func TestIndexListGivenTwiceKeepsOnlyItsLastAndEachIsChecked(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	bundleEntry := `{"bundle_id":"org.example.b","version":1,"size":1,"sha256":"` + sum + `","href":"` + BundlesPrefix + `org.example.b"}`
	statementEntry := `{"content_type":"` + bundle.MediaTypeRevocation + `","size":1,"sha256":"` + sum + `","href":"` + StatementsPrefix + sum + `"}`
	heartbeatEntry := `{"bundle_id":"org.example.b","version":4,"created_at":"2026-11-20T11:00:00Z","size":1,"sha256":"` + sum + `","href":"` + StatementsPrefix + sum + `"}`
	for _, tc := range []struct {
		member, entry string
		count         func(*Index) int
	}{
		{"bundles", bundleEntry, func(ix *Index) int { return len(ix.Bundles) }},
		{"statements", statementEntry, func(ix *Index) int { return len(ix.Statements) }},
		{"heartbeats", heartbeatEntry, func(ix *Index) int { return len(ix.Heartbeats) }},
	} {
		t.Run(tc.member, func(t *testing.T) {
			index := func(first, second string) []byte {
				return []byte(`{"format":"` + IndexFormat + `","generation":1,"capabilities":[],` +
					`"` + tc.member + `":[` + first + `],"` + tc.member + `":[` + second + `]}`)
			}
			ix, err := DecodeIndex(index(tc.entry, tc.entry))
			if err != nil || tc.count(ix) != 1 {
				t.Fatalf("the same entry in a member given twice: err %v, want one entry kept", err)
			}
			_, err = DecodeIndex(index(tc.entry+","+tc.entry, ""))
			if amp.NameOf(err) != ErrBadIndex {
				t.Fatalf("an entry repeated in one member: %v, want %s", err, ErrBadIndex)
			}
			if ix, err = DecodeIndex(index(tc.entry, "")); err != nil || tc.count(ix) != 0 {
				t.Fatalf("a member given twice, the last empty: err %v, want nothing kept", err)
			}
			for name, pair := range map[string][2]string{
				"bad first": {`{}`, tc.entry},
				"bad last":  {tc.entry, `{}`},
				"not JSON":  {tc.entry, `"x"`},
			} {
				if _, err := DecodeIndex(index(pair[0], pair[1])); amp.NameOf(err) != ErrBadIndex {
					t.Errorf("%s: %v, want %s", name, err, ErrBadIndex)
				}
			}
		})
	}
}
