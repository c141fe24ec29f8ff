package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
)

// RFC 004 Appendix A vectors, run end to end through an agent: their
// bodies travel in signed AMP messages (testdata/vectors/rfc004/README.md).

type vector struct {
	Vector string `json:"vector"`
	Kind   string `json:"kind"`
	Input  struct {
		Type             string   `json:"type"`
		Caller           string   `json:"caller"`
		BodyHex          string   `json:"body_hex"`
		ProviderVersions []string `json:"provider_versions"`
		Capability       string   `json:"capability"`
		Cursors          []string `json:"cursors"`
		RequestType      string   `json:"request_type"`
		ReplyType        string   `json:"reply_type"`
		ReplyTo          string   `json:"reply_to"`
		Bodies           []struct {
			BodyHex string `json:"body_hex"`
		} `json:"bodies"`
	} `json:"input"`
	Expect struct {
		Outcome    string          `json:"outcome"`
		Code       amp.Code        `json:"code"`
		Name       string          `json:"name"`
		ReplyType  string          `json:"reply_type"`
		Status     string          `json:"status"`
		Results    int             `json:"results"`
		ID         string          `json:"id"`
		IDs        []string        `json:"ids"`
		Capability string          `json:"capability"`
		Order      string          `json:"order"`
		SameBody   bool            `json:"same_body"`
		Pages      [][]string      `json:"pages"`
		Violations json.RawMessage `json:"violations"`
	} `json:"expect"`
}

var vectorFiles = filepath.Join("..", "testdata", "vectors", "rfc004")

func loadVector(t *testing.T, prefix string) vector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorFiles, prefix+"-*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("vector file %s-*.json: found %d (%v)", prefix, len(files), err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var v vector
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func hexBody(t *testing.T, h string) []byte {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil || len(b) == 0 {
		t.Fatalf("vector body_hex: %v", err)
	}
	return b
}

func (e *env) callerFor(v vector) amp.Identity {
	if v.Input.Caller == "unauthorized" {
		return e.stranger
	}
	return e.caller
}

func typeOf(t *testing.T, s string) amp.Type {
	for _, ty := range amp.Types() {
		if ty.Name() == s {
			return ty
		}
	}
	t.Fatalf("unknown type %s in vector", s)
	return 0
}

// checkOutcome compares a reply with the vector's expectation.
func checkOutcome(t *testing.T, v vector, reply *amp.Message) {
	t.Helper()
	if v.Expect.ReplyType != "" && reply.Type.Name() != v.Expect.ReplyType {
		t.Fatalf("%s: reply %s, want %s", v.Vector, reply.Type.Name(), v.Expect.ReplyType)
	}
	if v.Expect.Outcome == "error" {
		// The ERROR body of RFC 001 §15.1 carries the code (and category,
		// message, retry), not our snake_case names: the code is what
		// interoperates and what is checked.
		eb := errorOf(t, reply)
		if eb.Code != v.Expect.Code || eb.Category != v.Expect.Code.Category() {
			t.Fatalf("%s: got %d %q, want %d", v.Vector, eb.Code, eb.Message, v.Expect.Code)
		}
		return
	}
	if reply.Type == amp.TypeError {
		eb := errorOf(t, reply)
		t.Fatalf("%s: got ERROR %d %q, want acceptance", v.Vector, eb.Code, eb.Message)
	}
}

func runInvoke(t *testing.T, e *env, v vector) *amp.Message {
	t.Helper()
	_, reply := e.exchange(e.callerFor(v), amp.TypeCapInvoke, hexBody(t, v.Input.BodyHex))
	checkOutcome(t, v, reply)
	return reply
}

// A.1: the agent's CAP_DECLARE carries a valid descriptor of the id the
// vector names, under both profiles.
func TestA01_CapDeclarePositive(t *testing.T) {
	v := loadVector(t, "a01")
	e := newEnv(t)
	d, _, err := e.client(e.caller, false).Query(context.Background(), capability.Query{Filter: capability.Filter{Capability: "org.agentries.code-review"}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, desc := range d.Capabilities {
		for _, p := range []capability.Profile{capability.ProfileDefault, capability.ProfileOffline} {
			if err := desc.Validate(p); err != nil {
				t.Fatalf("declared descriptor invalid: %v", err)
			}
		}
		for _, id := range v.Expect.IDs {
			if desc.ID().String() == id {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("CAP_DECLARE lacks %v", v.Expect.IDs)
	}
	// And the vector's own CAP_DECLARE body decodes as the client would.
	if _, err := capability.DecodeDeclare(hexBody(t, v.Input.BodyHex)); err != nil {
		t.Fatal(err)
	}
}

// A.2-A.4: the vector's CAP_INVOKE body, sent to an agent serving the
// vector's provider versions, runs the negotiated version (or 4003).
func runNegotiation(t *testing.T, prefix string) {
	v := loadVector(t, prefix)
	e := newEnv(t)
	if strings.Join(v.Input.ProviderVersions, ",") != "2.0.0,2.1.0" {
		t.Fatalf("the test agent serves code-review 2.0.0 and 2.1.0; the vector lists %v", v.Input.ProviderVersions)
	}
	reply := runInvoke(t, e, v)
	if v.Expect.Outcome == "accept" {
		if got := resultVersion(t, resultOf(t, reply)); got != v.Expect.ID {
			t.Fatalf("ran %s, want %s", got, v.Expect.ID)
		}
		if e.count(v.Expect.ID).Load() != 1 {
			t.Fatal("the negotiated handler did not run exactly once")
		}
	}
}

func TestA02_NegotiationExact(t *testing.T)    { runNegotiation(t, "a02") }
func TestA03_NegotiationFallback(t *testing.T) { runNegotiation(t, "a03") }
func TestA04_NegotiationMismatch(t *testing.T) { runNegotiation(t, "a04") }

// A.5: valid params, one terminal CAP_RESULT(success).
func TestA05_InvocationSchemaPositive(t *testing.T) {
	v := loadVector(t, "a05")
	e := newEnv(t)
	reply := runInvoke(t, e, v)
	r := resultOf(t, reply)
	if r.Status != v.Expect.Status || e.count("org.agentries.code-review:2.1.0").Load() != int64(v.Expect.Results) {
		t.Fatalf("status %s, %d handler runs", r.Status, e.count("org.agentries.code-review:2.1.0").Load())
	}
}

// A.6: a missing required field is 4004 naming its location, and the
// handler does not run.
func TestA06_InvocationSchemaViolation(t *testing.T) {
	v := loadVector(t, "a06")
	e := newEnv(t)
	reply := runInvoke(t, e, v)
	eb := errorOf(t, reply)
	got, err := amp.JSONValue(eb.Details)
	if err != nil {
		t.Fatal(err)
	}
	var gotV, wantV any
	json.Unmarshal(got, &gotV)
	json.Unmarshal(v.Expect.Violations, &wantV)
	gj, _ := json.Marshal(gotV)
	wj, _ := json.Marshal(wantV)
	if string(gj) != string(wj) {
		t.Fatalf("violations %s, want %s", gj, wj)
	}
	if contains(string(reply.Body), "func main") || contains(eb.Message, "string") {
		t.Fatal("the 4004 leaks input values or schema internals")
	}
	if n := e.count("org.agentries.code-review:2.1.0").Load(); n != 0 {
		t.Fatalf("handler ran %d times on invalid params", n)
	}
}

// A.7: a legacy type resolves through the alias table to the canonical
// name; the declaration lists that name, newest first.
func TestA07_LegacyAlias(t *testing.T) {
	v := loadVector(t, "a07")
	e := newEnv(t)
	_, reply := e.exchange(e.caller, amp.TypeCapQuery, hexBody(t, v.Input.BodyHex))
	checkOutcome(t, v, reply)
	d, err := capability.DecodeDeclare(reply.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Capabilities) != 2 || d.Capabilities[0].Name != v.Expect.Capability ||
		d.Capabilities[0].Version.String() != "2.1.0" || d.Capabilities[1].Version.String() != "2.0.0" {
		t.Fatalf("declaration %v", d.Capabilities)
	}
}

// A.8 and A.16: identity errors are 4001, through the agent too.
func TestA08_IdentityMismatch(t *testing.T) { runInvoke(t, newEnv(t), loadVector(t, "a08")) }
func TestA16_IdentityFormConflict(t *testing.T) {
	runInvoke(t, newEnv(t), loadVector(t, "a16"))
}

// A.9: an unauthorized caller gets 3001 and the same body, for an existing
// capability and a missing one (no capability enumeration).
func TestA09_UnauthorizedProbe(t *testing.T) {
	v := loadVector(t, "a09")
	e := newEnv(t)
	var bodies [][]byte
	for _, b := range v.Input.Bodies {
		_, reply := e.exchange(e.stranger, amp.TypeCapInvoke, hexBody(t, b.BodyHex))
		eb := errorOf(t, reply)
		if eb.Code != v.Expect.Code {
			t.Fatalf("got %d, want %d", eb.Code, v.Expect.Code)
		}
		bodies = append(bodies, reply.Body)
	}
	if v.Expect.SameBody && !bytes.Equal(bodies[0], bodies[1]) {
		t.Fatalf("the 3001 bodies differ:\n%x\n%x", bodies[0], bodies[1])
	}
	// A caller allowed another namespace only: the same 3001 for an
	// existing and a missing capability of this one.
	e2 := newEnv(t, withConfig(func(c *Config) { c.Policy = Rules{{Caller: "*", Prefix: "com.example"}} }))
	var b2 [][]byte
	for _, b := range v.Input.Bodies {
		_, reply := e2.exchange(e2.caller, amp.TypeCapInvoke, hexBody(t, b.BodyHex))
		if errorOf(t, reply).Code != amp.CodeUnauthorized {
			t.Fatal("a caller without access to the namespace did not get 3001")
		}
		b2 = append(b2, reply.Body)
	}
	if !bytes.Equal(b2[0], b2[1]) {
		t.Fatal("capability-scoped 3001 bodies differ")
	}
	if e.count("org.agentries.code-review:2.1.0").Load() != 0 {
		t.Fatal("a handler ran for an unauthorized caller")
	}
}

// tamperingTransport delivers to the agent, then re-signs the agent's reply
// with the provider's key after changing its reply_to: a provider that
// answers with a correctly signed but uncorrelated reply.
func tamperingTransport(e *env, replyTo string) client.Transport {
	return client.TransportFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		raw, err := e.agent.Handle(ctx, msg)
		if err != nil {
			return nil, err
		}
		r, _ := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now})
		m, err := r.Receive(ctx, raw)
		if err != nil {
			return nil, err
		}
		switch replyTo {
		case "other":
			m.ReplyTo = bytes.Repeat([]byte{0xee}, 16)
		case "absent":
			m.ReplyTo = nil
		}
		if err := amp.Sign(m, e.provider.SigningKey); err != nil {
			return nil, err
		}
		return m.Encode(), nil
	})
}

func runCorrelation(t *testing.T, prefix string) {
	v := loadVector(t, prefix)
	e := newEnv(t)
	c, err := client.New(client.Config{Identity: e.caller, Peer: e.provider.DID, Transport: tamperingTransport(e, v.Input.ReplyTo),
		Now: e.clock.Now, Rand: rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(context.Background(), typeOf(t, v.Input.RequestType), hexBody(t, v.Input.BodyHex))
	// The client raises this error itself, so its name is checked too.
	if !errors.Is(err, v.Expect.Code) || !errors.Is(err, amp.ErrName(v.Expect.Name)) {
		t.Fatalf("got %v, want %d %s", err, v.Expect.Code, v.Expect.Name)
	}
	// The honest provider's reply is accepted by the same client code.
	if _, err := e.client(e.caller, false).Do(context.Background(), typeOf(t, v.Input.RequestType), hexBody(t, v.Input.BodyHex)); err != nil {
		t.Fatalf("correlated reply refused: %v", err)
	}
}

func TestA12_CapResultCorrelation(t *testing.T)  { runCorrelation(t, "a12") }
func TestA13_CapDeclareCorrelation(t *testing.T) { runCorrelation(t, "a13") }

// A.14: pages of a consistent snapshot follow (name ASC, version DESC)
// with no duplicates and no skips.
func TestA14_PaginationStability(t *testing.T) {
	v := loadVector(t, "a14")
	e := newEnv(t)
	if strings.Join(v.Input.ProviderVersions, ",") != strings.Join(agentriesVersions, ",") {
		t.Fatalf("the test agent serves paging %v", agentriesVersions)
	}
	q, err := capability.DecodeQuery(hexBody(t, v.Input.BodyHex))
	if err != nil {
		t.Fatal(err)
	}
	c := e.client(e.caller, false)
	var pages [][]string
	for {
		d, _, err := c.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		var page []string
		for _, desc := range d.Capabilities {
			page = append(page, desc.Version.String())
		}
		pages = append(pages, page)
		if d.NextCursor == "" {
			break
		}
		q.Cursor = d.NextCursor
	}
	gj, _ := json.Marshal(pages)
	wj, _ := json.Marshal(v.Expect.Pages)
	if string(gj) != string(wj) {
		t.Fatalf("pages %s, want %s", gj, wj)
	}
}

// A.15: bad cursors are 4001.
func TestA15_InvalidCursor(t *testing.T) {
	v := loadVector(t, "a15")
	e := newEnv(t)
	c := e.client(e.caller, false)
	q, err := capability.DecodeQuery(hexBody(t, v.Input.BodyHex))
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := c.Query(context.Background(), q)
	if err != nil || d.NextCursor == "" {
		t.Fatalf("first page: %v", err)
	}
	good := d.NextCursor
	for _, kind := range v.Input.Cursors {
		t.Run(kind, func(t *testing.T) {
			q2 := q
			q2.Cursor = good
			client := c
			switch kind {
			case "malformed":
				q2.Cursor = "not a cursor!"
			case "forged":
				b := []byte(good)
				b[len(b)/2] ^= 0x01
				if b[len(b)/2] == '-' || b[len(b)/2] == '_' {
					b[len(b)/2] = 'A'
				}
				q2.Cursor = string(b)
			case "expired":
				e.clock.Add(11 * 60 * 1e9)
				defer e.clock.Add(-11 * 60 * 1e9)
			case "filter_changed":
				r, _ := capability.ParseRange(">=1.0.0")
				q2.Filter.Version = r
			case "order_changed":
				q2.Order = capability.OrderOldestFirst
			case "other_caller":
				// Another authorized caller presents this caller's cursor.
				e2 := newEnv(t, withConfig(func(c *Config) { c.Policy = Rules{{Caller: "*", Prefix: "*"}} }))
				e2.agent.cursorKey = e.agent.cursorKey // same agent key: only the binding differs
				client = e2.client(e2.stranger, false)
			case "past_the_end":
				// A cursor that points after the last version is refused.
				q2.Cursor = e.agent.sealCursor(e.agent.cursorBinding(e.caller.DID, q.Filter, q.EffectiveOrder()), mustVersion(t, "0.0.1"))
			default:
				t.Fatalf("unknown cursor kind %s", kind)
			}
			_, _, err := client.Query(context.Background(), q2)
			if !errors.Is(err, v.Expect.Code) {
				t.Fatalf("%s cursor: got %v, want %d", kind, err, v.Expect.Code)
			}
		})
	}
}

func mustVersion(t testing.TB, s string) capability.Version {
	v, err := capability.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A.17: no match is 4002, never an empty declaration.
func TestA17_QueryNoMatch(t *testing.T) {
	v := loadVector(t, "a17")
	e := newEnv(t)
	_, reply := e.exchange(e.caller, amp.TypeCapQuery, hexBody(t, v.Input.BodyHex))
	checkOutcome(t, v, reply)
	// A name that exists but no version in range is 4003.
	r, _ := capability.ParseRange(">=9.0.0")
	body, _ := capability.Query{Filter: capability.Filter{Capability: "org.agentries.code-review", Version: r}}.Encode()
	_, reply = e.exchange(e.caller, amp.TypeCapQuery, body)
	if errorOf(t, reply).Code != amp.CodeVersionMismatch {
		t.Fatal("range no-match is not 4003")
	}
}

// TestRFC004VectorFilesCovered fails if a vector file of the folder is not
// run by the agent or the capability package (or the glob is empty).
func TestRFC004VectorFilesCovered(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(vectorFiles, "a*.json"))
	if len(files) < 15 {
		t.Fatalf("found %d RFC 004 vector files", len(files))
	}
	known := map[string]bool{"decode_body": true, "negotiate": true, "resolve_type": true, "agent_invoke": true,
		"agent_invoke_probe": true, "agent_query": true, "agent_paging": true, "agent_cursor": true, "client_correlation": true}
	for _, f := range files {
		var v vector
		data, _ := os.ReadFile(f)
		if err := json.Unmarshal(data, &v); err != nil || !known[v.Kind] {
			t.Errorf("%s: kind %q is run by nobody", f, v.Kind)
		}
	}
}
