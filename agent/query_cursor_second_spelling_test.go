package agent

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestQueryCursorHasASecondSpelling covers cursors a caller respells.
//
// Attack: a caller takes a next-page cursor and writes it another way that
// decodes to the same bytes: non-zero trailing bits in its last character
// (base64.RawURLEncoding ignores them), or a CR or LF inside it (the
// decoder skips them). The MAC covers the bytes, not the string, so the
// respelled cursor opens the same page: a cursor is no longer one string,
// and anything that compares, counts or remembers cursors by their text
// can be walked around.
//
// Before: openCursor decoded with base64.RawURLEncoding and accepted every
// spelling.
//
// Should: only the spelling the agent issued opens; any other is 4001
// invalid_cursor.
func TestQueryCursorHasASecondSpelling(t *testing.T) {
	e := newEnv(t)
	q := capability.Query{Filter: capability.Filter{Capability: "org.agentries.paging"}}
	bind := e.agent.cursorBinding(e.caller.DID, q.Filter, q.EffectiveOrder())
	var good string
	for _, v := range []string{"1.0.0", "1.0.10", "1.0.100"} {
		c := e.agent.sealCursor(bind, mustVersion(t, v))
		if raw, _ := base64.RawURLEncoding.DecodeString(c); len(raw)%3 != 0 {
			good = c // its last character carries unused bits
			break
		}
	}
	if good == "" {
		t.Fatal("no cursor with trailing bits")
	}
	if _, err := e.agent.openCursor(good, bind); err != nil {
		t.Fatalf("the issued cursor is refused: %v", err)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := alphabet[strings.IndexByte(alphabet, good[len(good)-1])|1]
	for name, spelled := range map[string]string{
		"trailing bits":   good[:len(good)-1] + string(last),
		"line feed":       good[:4] + "\n" + good[4:],
		"carriage return": good[:4] + "\r" + good[4:],
	} {
		t.Run(name, func(t *testing.T) {
			if raw, err := base64.RawURLEncoding.DecodeString(spelled); err != nil {
				t.Fatalf("the respelled cursor must still decode laxly: %v", err)
			} else if want, _ := base64.RawURLEncoding.DecodeString(good); string(raw) != string(want) {
				t.Fatal("the respelled cursor must decode to the same bytes")
			}
			_, err := e.agent.openCursor(spelled, bind)
			if amp.CodeOf(err) != amp.CodeBadRequest || amp.NameOf(err) != "invalid_cursor" {
				t.Fatalf("a second spelling of one cursor: got %v, want 4001 invalid_cursor", err)
			}
		})
	}
}
