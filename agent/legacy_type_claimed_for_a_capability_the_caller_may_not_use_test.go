package agent

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// claimTranslateForComExample installs a bundle of com.example (the env's
// second publisher) whose com.example.translate-check (with a handler)
// claims the legacy type "translate". The env's org.agentries.translate,
// of another authority, has "translate" as its slug, and no bundle of
// org.agentries claims the type.
func claimTranslateForComExample(e *env) {
	e.t.Helper()
	id := "com.example.translate-check:1.0.0"
	e.importBundle(testBundle(e.t, seedKey(22), "com.example.lang", 1,
		map[string][2]string{id: {anyObject, anyObject}}, map[string]string{"translate": "com.example.translate-check"}))
	e.handlers[id] = e.echo(id)
	e.cfg.Handlers = e.handlers
	cat, err := e.store.Catalog()
	if err != nil {
		e.t.Fatal(err)
	}
	if got := cat.TypeClaims("translate"); len(got) != 1 || got[0] != "com.example.translate-check" {
		e.t.Fatalf("test setup: the claims of translate are %v", got)
	}
}

// agentFor starts the env's agent under rules giving its caller the
// prefixes, its catalog read from the store or through the admin socket.
func agentFor(e *env, feed string, prefixes []string) {
	e.t.Helper()
	var rules Rules
	for _, p := range prefixes {
		rules = append(rules, Rule{Caller: e.caller.DID, Prefix: p})
	}
	e.cfg.Policy = rules
	e.cfg.Ledger = memoryLedger(e.t, e.clock.Now, ledger.Limits{})
	if feed == "admin socket" {
		e.cfg.registry = socketRegistry{storeRegistry{e.store}, serveAdminSocket(e)}
	}
	a, err := New(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { a.Close() })
	e.agent = a
}

// byType sends the caller's CAP_QUERY and CAP_INVOKE (version 1.0.0) by
// legacy type typ and returns the two replies.
func byType(e *env, typ string) map[string]*amp.Message {
	e.t.Helper()
	qb, err := capability.Query{Filter: capability.Filter{Type: typ}}.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	p, _ := amp.Marshal(goodParams)
	ib, err := capability.Invoke{Type: typ, Version: mustVersion(e.t, "1.0.0"), Params: p}.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	_, q := e.exchange(e.caller, amp.TypeCapQuery, qb)
	_, i := e.exchange(e.caller, amp.TypeCapInvoke, ib)
	return map[string]*amp.Message{"CAP_QUERY": q, "CAP_INVOKE": i}
}

// answeredName returns the capability a reply to byType answered: the
// declared name of a CAP_DECLARE, the capability that ran for a
// CAP_RESULT, "" for an ERROR.
func answeredName(t *testing.T, m *amp.Message) string {
	t.Helper()
	switch m.Type {
	case amp.TypeCapDeclare:
		d, err := capability.DecodeDeclare(m.Body)
		if err != nil || len(d.Capabilities) == 0 {
			t.Fatalf("declaration %+v %v", d, err)
		}
		return d.Capabilities[0].Name
	case amp.TypeCapResult:
		id, err := capability.ParseID(resultVersion(t, resultOf(t, m)))
		if err != nil {
			t.Fatal(err)
		}
		return id.Name
	}
	return ""
}

// TestLegacyTypeClaimedForACapabilityTheCallerMayNotUseIsNotRoutedBySlug
//
// Attack (a confused deputy): com.example claims the legacy type
// "translate" for its com.example.translate-check; org.agentries'
// org.agentries.translate, another authority's capability with another
// contract, has "translate" as its slug. The agent resolved a type "as
// if the capabilities the caller may not use did not exist" (CAP-3): for
// a caller allowed org.agentries only, com.example's claim was dropped
// and the type fell to the slug match: its CAP_QUERY was answered with
// the declaration of org.agentries.translate, and its CAP_INVOKE ran
// org.agentries.translate with params written for com.example's
// capability. The same shape STORE-8 mended for a claim that fails
// closed, here per caller.
//
// Defence (docs/SPEC-DECISIONS.md CAP-12): a type that some installed
// bundle claims never falls to the slug match; a caller that may use
// none of its claims gets the one 4002 of a type that exists nowhere,
// byte for byte, and no handler runs. A type nobody claims still resolves
// by slug, and a caller allowed the claim gets it. The same through the
// admin socket's catalog document.
func TestLegacyTypeClaimedForACapabilityTheCallerMayNotUseIsNotRoutedBySlug(t *testing.T) {
	for _, feed := range []string{"store", "admin socket"} {
		for _, tc := range []struct {
			name     string
			prefixes []string
			typ      string
			want     string // the capability answered, or "" for the 4002 of a type that exists nowhere
		}{
			{"claimed, caller allowed only the slug's authority", []string{"org.agentries"}, "translate", ""},
			{"claimed, caller allowed only the slug itself", []string{"org.agentries.translate"}, "translate", ""},
			{"claimed, caller allowed the claim", []string{"com.example."}, "translate", "com.example.translate-check"},
			{"claimed, caller allowed both", []string{"org.agentries", "com.example."}, "translate", "com.example.translate-check"},
			{"claimed, caller allowed neither", []string{"net.other"}, "translate", ""},
			{"unclaimed, resolved by slug", []string{"org.agentries"}, "paging", "org.agentries.paging"},
		} {
			t.Run(feed+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t)
				claimTranslateForComExample(e)
				agentFor(e, feed, tc.prefixes)
				none := errorOf(t, byType(e, "no-such-type")["CAP_QUERY"])
				nb, _ := amp.Marshal(none)
				for what, reply := range byType(e, tc.typ) {
					if tc.want != "" {
						if got := answeredName(t, reply); got != tc.want {
							t.Fatalf("%s: %s answered %s %q, want %s", what, tc.typ, reply.Type.Name(), got, tc.want)
						}
						continue
					}
					if got := answeredName(t, reply); got != "" {
						t.Errorf("%s: %s, claimed by com.example, answered %q for a caller that may not use the claim", what, tc.typ, got)
						continue
					}
					got := errorOf(t, reply)
					gb, _ := amp.Marshal(got)
					if got.Code != amp.CodeCapabilityNotFound || !bytes.Equal(gb, nb) {
						t.Fatalf("%s: %s answered %+v, a type that exists nowhere %+v", what, tc.typ, got, none)
					}
				}
				if tc.want == "" {
					for _, id := range []string{"org.agentries.translate:1.0.0", "com.example.translate-check:1.0.0"} {
						if n := e.count(id).Load(); n != 0 {
							t.Errorf("%s ran %d times", id, n)
						}
					}
				}
			})
		}
	}
}

// TestRevokingAClaimTheCallerMayNotUseChangesNothingItSees
//
// Oracle (STORE-8, left open): for a caller that may not use a type's
// claim, a served claim fell to the slug match while a claim that fails
// closed was 4002, so such a caller learned, by asking, that another
// authority's key had been revoked. Defence (CAP-12): both are the 4002
// of a type that exists nowhere, byte for byte.
func TestRevokingAClaimTheCallerMayNotUseChangesNothingItSees(t *testing.T) {
	e := newEnv(t)
	claimTranslateForComExample(e)
	agentFor(e, "store", []string{"org.agentries"})
	before := byType(e, "translate")
	key := seedKey(22)
	r := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: "com.example", CreatedAt: "2026-11-22T00:00:00Z",
		Keys: []string{amp.DIDKey(key.Public().(ed25519.PublicKey))}}
	stmt, err := bundle.SignRevocation(r, []ed25519.PrivateKey{key})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.store.ApplyRevocation(stmt); err != nil || len(res.FailedClosed) != 2 {
		t.Fatalf("test setup: %+v %v", res, err)
	}
	after := byType(e, "translate")
	for what := range before {
		if before[what].Type != amp.TypeError {
			t.Fatalf("%s: a served claim the caller may not use answered %s %q", what, before[what].Type.Name(), answeredName(t, before[what]))
		}
		b, a := errorOf(t, before[what]), errorOf(t, after[what])
		bb, _ := amp.Marshal(b)
		ab, _ := amp.Marshal(a)
		if !bytes.Equal(bb, ab) {
			t.Fatalf("%s: the caller told a served claim (%+v) from a revoked one (%+v)", what, b, a)
		}
	}
}

// TestCursorOfALegacyTypeDoesNotContinueOnAnotherCapability
//
// Attack: a cursor (docs/SPEC-DECISIONS.md CAP-1) is bound to the caller,
// the filter and the order, and holds the last version shown, not the
// capability. A CAP_QUERY by legacy type "paging" (no claim: the slug of
// org.agentries.paging, five versions) took a page of two and its cursor;
// then com.example installed the next release of its bundle, now claiming
// "paging" for its com.example.pager (2.0.0, 3.0.0). The cursor, still bound to the same
// filter, continued after 1.1.0 on com.example.pager: one paged answer
// made of two authorities' capabilities, the second page a capability the
// first page never named.
//
// Defence (CAP-13): the cursor is bound to the name its type resolved to;
// when the type resolves elsewhere the cursor is 4001 invalid_cursor, and
// the caller queries afresh. Paging an unchanged type is unchanged.
func TestCursorOfALegacyTypeDoesNotContinueOnAnotherCapability(t *testing.T) {
	for _, tc := range []struct {
		name  string
		claim bool
		want  amp.Code // 0: the next page of org.agentries.paging
	}{
		{"the type resolves as before", false, 0},
		{"the type resolves elsewhere", true, amp.CodeBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			pager := map[string][2]string{"com.example.pager:2.0.0": {anyObject, anyObject}, "com.example.pager:3.0.0": {anyObject, anyObject}}
			e.importBundle(testBundle(t, seedKey(22), "com.example.pager", 1, pager, nil))
			for id := range pager {
				e.handlers[id] = e.echo(id)
			}
			e.cfg.Handlers = e.handlers
			agentFor(e, "store", []string{"org.agentries", "com.example."})
			two := uint64(2)
			q := capability.Query{Filter: capability.Filter{Type: "paging"}, Limit: &two, Order: capability.OrderOldestFirst}
			page := func(q capability.Query) *amp.Message {
				b, err := q.Encode()
				if err != nil {
					t.Fatal(err)
				}
				_, reply := e.exchange(e.caller, amp.TypeCapQuery, b)
				return reply
			}
			first := page(q)
			d, err := capability.DecodeDeclare(first.Body)
			if first.Type != amp.TypeCapDeclare || err != nil || d.NextCursor == "" || d.Capabilities[0].Name != "org.agentries.paging" {
				t.Fatalf("test setup: first page %s %+v %v", first.Type.Name(), d, err)
			}
			if tc.claim {
				e.importBundle(testBundle(t, seedKey(22), "com.example.pager", 2, pager, map[string]string{"paging": "com.example.pager"}))
			}
			q.Cursor = d.NextCursor
			next := page(q)
			if tc.want != 0 {
				if got := answeredName(t, next); got != "" {
					t.Fatalf("the cursor of paging's first page continued on %s", got)
				}
				if eb := errorOf(t, next); eb.Code != tc.want || !strings.Contains(eb.Message, "another filter or order") {
					t.Fatalf("the cursor of paging's first page answered %+v, want %d: the cursor belongs to another filter", eb, tc.want)
				}
				return
			}
			if got := answeredName(t, next); got != "org.agentries.paging" {
				t.Fatalf("the next page is of %q", got)
			}
		})
	}
}
