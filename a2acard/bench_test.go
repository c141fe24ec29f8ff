package a2acard

import (
	"crypto/ed25519"
	"testing"
	"time"
)

// BenchmarkVerifyCard measures Verify of a card with 100 skills against
// ed25519.Verify alone over the same payload, in the same run: the ratio
// is what parsing, the checks and canonicalization add to the signature.
func BenchmarkVerifyCard(b *testing.B) {
	var served []Served
	for i := range 100 {
		v := "1." + string(rune('0'+i/10)) + string(rune('0'+i%10)) + ".0"
		served = append(served, Served{ID: "org.example.cap:" + v, Name: "org.example.cap", Version: v, Summary: "a capability",
			BundleID: "org.example", InputSchema: "sha-256:00", OutputSchema: "sha-256:01"})
	}
	c, err := New(Options{Name: "bench", Version: "1.0.0", URL: "https://agent.example/amp"}, served)
	if err != nil {
		b.Fatal(err)
	}
	key := vectorKey()
	pub := vectorPub()
	card, err := Sign(c, key, DIDKeyID(pub))
	if err != nil {
		b.Fatal(err)
	}
	payload, _ := Payload(c)
	input := signingInput(c.Signatures[0].Protected, payload)
	sig := ed25519.Sign(key, input)
	var bare time.Duration
	b.ResetTimer()
	for range b.N {
		if _, err := Verify(card, pub, ""); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if !ed25519.Verify(pub, input, sig) {
			b.Fatal("bare verify failed")
		}
		bare += time.Since(t0)
	}
	total := b.Elapsed()
	b.ReportMetric(float64(len(card)), "card-bytes")
	if bare > 0 {
		b.ReportMetric(float64(total-bare)/float64(bare), "x_ed25519")
	}
}
