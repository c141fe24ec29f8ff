package client

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// relayDoc is the DID document of did listing relays as
// AgentMessagingRelay services.
func relayDoc(t *testing.T, did string, relays ...string) *amp.DIDDocument {
	t.Helper()
	var svc []string
	for i, r := range relays {
		svc = append(svc, `{"id":"#relay-`+string(rune('a'+i))+`","type":"AgentMessagingRelay","serviceEndpoint":"`+r+`"}`)
	}
	d, err := amp.ParseDIDDocument([]byte(`{"id":"` + did + `","service":[` + strings.Join(svc, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRelayAckAcceptedOnlyFromRelaysTheDIDDocumentsList: a relay ACK
// moves a message to delivered only when its signer is a relay that the
// sender's own DID document, or the document of the recipient it reports
// on, lists as an AgentMessagingRelay service (RFC 001 §16.1); a relay
// listed by nobody, or by another recipient than the one it names, is
// refused (threat: any DID claiming "delivered" for a message it never
// carried).
func TestRelayAckAcceptedOnlyFromRelaysTheDIDDocumentsList(t *testing.T) {
	e := newParties(t)
	bob, carol := identity(t, 4), identity(t, 5)
	relayOfBob, relayOfMe, stranger := identity(t, 6), identity(t, 7), e.stranger
	docs := []*amp.DIDDocument{relayDoc(t, bob.DID, relayOfBob.DID), relayDoc(t, carol.DID)}
	self := relayDoc(t, e.caller.DID, relayOfMe.DID)
	for _, c := range []struct {
		name   string
		from   amp.Identity
		to     amp.Recipients
		target string
		ok     bool
	}{
		{"relay listed by the recipient", relayOfBob, amp.To(bob.DID), "", true},
		{"relay listed by the sender", relayOfMe, amp.To(carol.DID), "", true},
		{"relay listed by nobody", stranger, amp.To(bob.DID), "", false},
		{"relay of one recipient acking for another", relayOfBob, amp.ToList(bob.DID, carol.DID), carol.DID, false},
		{"relay of the recipient it names", relayOfBob, amp.ToList(bob.DID, carol.DID), bob.DID, true},
		{"relay of a recipient, no target, two recipients", relayOfBob, amp.ToList(bob.DID, carol.DID), "", true},
		{"relay listed for a recipient of another message", relayOfBob, amp.To(carol.DID), "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ob := mustOutbox(t, OutboxConfig{Now: e.clock.Now, Self: self, Documents: docs})
			s, _ := amp.NewSender(amp.SenderConfig{Identity: e.caller, Rand: rand.Reader, Now: e.clock.Now})
			orig, _, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: c.to})
			if err != nil {
				t.Fatal(err)
			}
			if err := ob.Add(orig); err != nil {
				t.Fatal(err)
			}
			body, _ := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRelay, ReceivedAt: 1, AckTarget: c.target})
			rs, _ := amp.NewSender(amp.SenderConfig{Identity: c.from, Rand: rand.Reader, Now: e.clock.Now})
			ack, _, err := rs.Seal(context.Background(), amp.Draft{Type: amp.TypeAck, To: amp.To(e.caller.DID), ReplyTo: orig.ID[:], Body: body})
			if err != nil {
				t.Fatal(err)
			}
			used := ob.Receive(context.Background(), Receipt{Message: ack})
			st, _ := ob.State(orig.ID)
			if used != c.ok || (st.State == OutDelivered) != c.ok {
				t.Fatalf("used %v, state %d; want accepted = %v", used, st.State, c.ok)
			}
		})
	}
}

// TestReadDIDDocumentsRefusesMalformedClearly: the operator's DID document
// files are read within the size cap and parsed strictly; a bad one is
// invalid_did_document naming the file by position, never echoing it, and
// an outbox refuses two documents for one DID.
func TestReadDIDDocumentsRefusesMalformedClearly(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bob := identity(t, 4).DID
	good := write("good.json", `{"id":"`+bob+`","service":[{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":"did:web:relay.example"}]}`)
	docs, err := ReadDIDDocuments(good)
	if err != nil || len(docs) != 1 || strings.Join(docs[0].Relays, ",") != "did:web:relay.example" {
		t.Fatalf("good document: %v %v", docs, err)
	}
	for _, c := range []struct {
		name, body string
	}{
		{"not json", `SECRET-CONTENT {`},
		{"relay service naming no did", `{"id":"` + bob + `","service":[{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":"https://SECRET-CONTENT.example"}]}`},
		{"over the size cap", `{"id":"` + bob + `","x":"` + strings.Repeat("S", amp.MaxDIDDocumentSize) + `"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadDIDDocuments(good, write(c.name, c.body))
			if amp.NameOf(err) != "invalid_did_document" || !strings.Contains(err.Error(), "did document 2") || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("got %v", err)
			}
		})
	}
	if _, err := ReadDIDDocuments(filepath.Join(dir, "missing.json")); amp.NameOf(err) != "invalid_did_document" {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := NewOutbox(OutboxConfig{Now: newParties(t).clock.Now, Documents: append(docs, docs[0])}); amp.NameOf(err) != "misconfigured" {
		t.Fatalf("two documents for one did: %v", err)
	}
}
