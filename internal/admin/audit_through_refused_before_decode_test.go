//go:build unix

package admin

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestAuditThroughPastTheLogIsRefusedBeforeItIsDecoded
//
// Attack: GET /v1/audit?through=N with N one past the log's length. The
// route decoded the whole log (AuditFirst(N) reads up to N entries) and
// only then, counting what it read, refused the request bad_request: every
// such request cost the agent a decode of the log it then threw away.
//
// Was: the refusal cost as much as a read of the log. Now
// (docs/SPEC-DECISIONS.md ADMIN-6): the log's length is read from its last
// key first, and the request is refused before any entry is decoded; it
// allocates under a tenth of what reading the log does, measured in the
// same run.
func TestAuditThroughPastTheLogIsRefusedBeforeItIsDecoded(t *testing.T) {
	s, _, _ := serve(t)
	for i := range 300 {
		if err := s.TrustSetThreshold(fmt.Sprintf("org.n%03d", i), 1); err != nil {
			t.Fatal(err)
		}
	}
	count, err := s.AuditCount()
	if err != nil || count < 300 {
		t.Fatalf("AuditCount: %d %v; want at least 300", count, err)
	}
	op := opAudit()
	allocated := func(through uint64) (uint64, error) {
		req := auditRequest{Through: strconv.FormatUint(through, 10)}
		var err error
		a := testalloc.Least(func() { _, err = op.Run(s, req) })
		return a, err
	}
	read, err := allocated(count)
	if err != nil {
		t.Fatalf("through=%d (the whole log): %v", count, err)
	}
	refused, err := allocated(count + 1)
	if amp.NameOf(err) != "bad_request" {
		t.Fatalf("through=%d (one past the log): %v; want bad_request", count+1, err)
	}
	if refused*10 > read {
		t.Errorf("refusing through=%d allocated %d bytes, reading the log %d: the refusal decodes the log", count+1, refused, read)
	}
}
