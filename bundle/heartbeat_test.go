package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

func docHeartbeat() *Heartbeat {
	return &Heartbeat{Format: HeartbeatFormat, BundleID: "org.example.min", Version: 7, CreatedAt: "2026-01-01T00:00:00Z"}
}

// TestFormatDocHeartbeatExample keeps docs/FORMAT.md §23 honest: the
// annotated heartbeat is exactly what SignHeartbeat writes with the
// example key, it parses, and it verifies against a store trusting that
// key for org.example.
func TestFormatDocHeartbeatExample(t *testing.T) {
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	signed, err := SignHeartbeat(docHeartbeat(), []ed25519.PrivateKey{k})
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("AMPBUNDLE_PRINT_DOC_EXAMPLES") != "" {
		t.Logf("heartbeat %d bytes\n%x", len(signed), signed)
	}
	want := docHex(t, "heartbeat-example-hex")
	if !bytes.Equal(signed, want) {
		t.Fatalf("docs/FORMAT.md heartbeat example differs:\n doc %x\nmade %x", want, signed)
	}
	h, obj, err := ParseHeartbeat(want)
	if err != nil || *h != *docHeartbeat() {
		t.Fatalf("%+v %v", h, err)
	}
	if _, err := VerifyStatement(obj, trust(k, "org.example"), h.BundleID); err != nil {
		t.Fatal(err)
	}
	// Tampering with any byte of the example is refused.
	for i := range want {
		bad := append([]byte{}, want...)
		bad[i] ^= 0x01
		if h, obj, err := ParseHeartbeat(bad); err == nil {
			if _, err := VerifyStatement(obj, trust(k, "org.example"), h.BundleID); err == nil {
				t.Fatalf("byte %d flipped: still a valid heartbeat", i)
			}
		}
	}
}

// TestHeartbeatMalformedRefused: a heartbeat with a bad field, or another
// statement's content type, is refused by name.
func TestHeartbeatMalformedRefused(t *testing.T) {
	k := testKey(1)
	tests := []struct {
		name string
		edit func(h *Heartbeat)
	}{
		{"wrong format", func(h *Heartbeat) { h.Format = "ampbundle-heartbeat/2" }},
		{"version zero", func(h *Heartbeat) { h.Version = 0 }},
		{"bad bundle id", func(h *Heartbeat) { h.BundleID = "Not An Id" }},
		{"local time", func(h *Heartbeat) { h.CreatedAt = "2026-01-01T01:00:00+01:00" }},
		{"fractional seconds", func(h *Heartbeat) { h.CreatedAt = "2026-01-01T00:00:00.5Z" }},
	}
	for _, tt := range tests {
		h := docHeartbeat()
		tt.edit(h)
		if _, err := SignHeartbeat(h, []ed25519.PrivateKey{k}); !errors.Is(err, ErrInvalidStatement) {
			t.Fatalf("%s: got %v", tt.name, err)
		}
	}
	rev, err := SignRevocation(&Revocation{Format: RevocationFormat, Scope: "org.example", CreatedAt: "2026-01-01T00:00:00Z",
		Bundles: []BundleVersion{{BundleID: "org.example.min", Version: 7}}}, []ed25519.PrivateKey{k})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseHeartbeat(rev); err == nil {
		t.Fatal("a revocation parsed as a heartbeat")
	}
}

// FuzzHeartbeat feeds arbitrary bytes to the heartbeat parser: no panic,
// every refusal is a named *amp.Error, and an accepted heartbeat re-signs
// to one that parses the same.
func FuzzHeartbeat(f *testing.F) {
	k := testKey(1)
	if data, err := SignHeartbeat(docHeartbeat(), []ed25519.PrivateKey{k, testKey(2)}); err == nil {
		f.Add(data)
	}
	f.Add([]byte{0xd8, 0x62, 0x84})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, _, err := ParseHeartbeat(data)
		if err != nil {
			var e *amp.Error
			if !errors.As(err, &e) || e.Name == "" {
				t.Fatalf("error without a name: %#v", err)
			}
			return
		}
		again, err := SignHeartbeat(h, []ed25519.PrivateKey{k})
		if err != nil {
			t.Fatalf("an accepted heartbeat does not re-sign: %v", err)
		}
		if h2, _, err := ParseHeartbeat(again); err != nil || *h2 != *h {
			t.Fatalf("re-signed heartbeat differs: %v", err)
		}
	})
}
