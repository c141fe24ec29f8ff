package resolver

import (
	"slices"
	"testing"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestAStoredDescriptorThatDoesNotDecodeFailsClosedForItsBundleAlone
//
// Attack (or damage): one stored descriptor that does not decode as the
// catalog decodes it: a record torn or edited in the store file, or a
// descriptor an older build stored under other caps (an unknown field of
// 70,000 items, which CAP-11 let through before its amendment). Catalog
// returned store_io for the whole store, so every publisher's
// capabilities went unlisted (an agent answers nothing), while check
// named no such kind.
//
// Defence (docs/SPEC-DECISIONS.md STORE-2): the catalog leaves that
// bundle out (its capabilities unlisted, its alias claims uncounted),
// or, when the entry does not even name its bundle, that capability
// version alone; the rest is listed; check names each entry (kind
// "descriptor_unreadable").
func TestAStoredDescriptorThatDoesNotDecodeFailsClosedForItsBundleAlone(t *testing.T) {
	target := key2("org.example.translate.text", "2.1.0")
	cases := []struct {
		name string
		edit func(t *testing.T, v []byte) []byte
		// want are the versions of org.example.translate.text still
		// listed (none when the bundle is left out).
		want []string
	}{
		{"a torn descriptor", func(t *testing.T, v []byte) []byte {
			return withStoredDescriptor(t, v, func(d []byte) []byte { return d[:len(d)-1] })
		}, nil},
		{"a descriptor stored under wider caps", func(t *testing.T, v []byte) []byte {
			return withStoredDescriptor(t, v, func(d []byte) []byte {
				desc, err := capability.DecodeDescriptor(d)
				if err != nil {
					t.Fatal(err)
				}
				wide, err := amp.Marshal(make([]int, 70000))
				if err != nil {
					t.Fatal(err)
				}
				desc.Extra = map[string]cbor.RawMessage{"x_wide": wide}
				enc, err := desc.Encode()
				if err != nil {
					t.Fatal(err)
				}
				return enc
			})
		}, nil},
		{"an entry that names no bundle", func(*testing.T, []byte) []byte { return []byte{0xff} },
			[]string{"1.0.0", "1.5.0", "2.0.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := storeAt(t)
			t.Cleanup(func() { s.Close() })
			mustImport(t, s, sampleBytes(t, "translate"))
			mustImport(t, s, sampleBytes(t, "geo"))
			if err := s.db.Update(func(tx *bolt.Tx) error {
				b := bucket(tx, bDescriptors)
				return b.Put(target, tc.edit(t, clone(b.Get(target))))
			}); err != nil {
				t.Fatal(err)
			}
			c, err := s.Catalog()
			if err != nil {
				t.Fatalf("one undecodable descriptor of org.example.translate: Catalog %v, want the other publishers' capabilities listed", err)
			}
			if len(c.Names) < 2 || !slices.Equal(c.Names[:2], []string{"com.acme.geo.distance", "com.acme.geo.geocode"}) {
				t.Fatalf("catalog names %v: com.acme.geo's capabilities are not listed", c.Names)
			}
			var got []string
			for _, v := range c.Versions("org.example.translate.text") {
				got = append(got, v.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("versions of org.example.translate.text listed: %v, want %v", got, tc.want)
			}
			if _, ok := c.Lookup(capability.ID{Name: "org.example.translate.text", Version: mustVersion(t, "2.1.0")}); ok {
				t.Fatal("the capability whose descriptor does not decode is listed")
			}
			if n, err := c.ResolveType("translate"); tc.want == nil && err == nil {
				t.Fatalf("the left-out bundle's legacy type still resolves, to %s", n)
			}
			ps, err := s.Check()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(ps, func(p Problem) bool { return p.Kind == ProblemDescriptorUnreadable }) {
				t.Fatalf("check problems %+v, want kind %s", ps, ProblemDescriptorUnreadable)
			}
		})
	}
}

// withStoredDescriptor returns the descriptor record v with its
// descriptor bytes replaced by edit's.
func withStoredDescriptor(t *testing.T, v []byte, edit func([]byte) []byte) []byte {
	t.Helper()
	var dr descRecord
	if err := decode(v, &dr); err != nil {
		t.Fatal(err)
	}
	dr.Descriptor = edit(dr.Descriptor)
	if _, err := capability.DecodeDescriptor(dr.Descriptor); err == nil {
		t.Fatal("test setup: the edited descriptor decodes")
	}
	return encode(dr)
}

func mustVersion(t *testing.T, v string) capability.Version {
	t.Helper()
	ver, err := capability.ParseVersion(v)
	if err != nil {
		t.Fatal(err)
	}
	return ver
}
