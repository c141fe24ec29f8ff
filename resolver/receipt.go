package resolver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"math"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// ReceiptFormat is the format string of a signed import receipt
// (docs/FORMAT.md §20).
const ReceiptFormat = "ampbundle-receipt/1"

// MaxReceiptSize bounds a receipt a verifier reads.
const MaxReceiptSize = 64 << 20

// ErrInvalidReceipt names a receipt that does not verify.
const ErrInvalidReceipt amp.ErrName = "invalid_receipt"

// ErrSiteKeyRequired names a receipt verification without the expected
// site key: a receipt proves only who signed it, so it is never reported
// as verified against nothing.
const ErrSiteKeyRequired amp.ErrName = "site_key_required"

// receiptPayload is the signed payload of a receipt.
type receiptPayload struct {
	Format   string   `cbor:"format"`
	Site     string   `cbor:"site"` // did:key of the site key, equal to the kid
	IssuedAt string   `cbor:"issued_at"`
	FirstSeq uint64   `cbor:"first_seq"`
	Prev     []byte   `cbor:"prev"`    // prev of the first entry
	Head     []byte   `cbor:"head"`    // SHA-256 of the last entry's encoding
	Entries  [][]byte `cbor:"entries"` // the audit entries exactly as stored
}

// Receipt is a verified receipt.
type Receipt struct {
	Site     string // did:key
	SiteKey  ed25519.PublicKey
	IssuedAt string
	FirstSeq uint64
	Prev     []byte
	Head     []byte
	Entries  []AuditEntry
}

// AuditEntryHash returns the SHA-256 of an entry's stored encoding: the
// value the next entry's prev and the audit head hold.
func AuditEntryHash(e AuditEntry) []byte { return sha256sum(encode(e)) }

// BuildReceipt returns a signed receipt over the entries of log with
// sequence numbers from..to (to 0: the last), signed by the site key at
// now. log must be the whole audit log, oldest first: its chain is checked
// before anything is signed. A receipt is self-contained: the entries as
// stored, the prev hash the first chains to, and the head hash the last
// gives, signed by the site key named in it (docs/FORMAT.md §20). A range
// whose receipt would be larger than MaxReceiptSize, which no verifier
// reads, is refused (invalid_receipt) before it is signed.
func BuildReceipt(log []AuditEntry, from, to uint64, site ed25519.PrivateKey, now time.Time) ([]byte, error) {
	if len(log) == 0 {
		return nil, fail(ErrInvalidReceipt, "the audit log is empty: nothing to put in a receipt")
	}
	if to == 0 {
		to = uint64(len(log))
	}
	if from < 1 || from > to || to > uint64(len(log)) {
		return nil, fail(ErrInvalidReceipt, "the entries %d..%d are not in the audit log (1..%d)", from, to, len(log))
	}
	prev := make([]byte, sha256.Size)
	p := receiptPayload{Format: ReceiptFormat, Site: amp.DIDKey(site.Public().(ed25519.PublicKey)),
		IssuedAt: formatTime(now), FirstSeq: from}
	size := 0 // the entries' bytes: a receipt of more is read by no verifier
	for i, e := range log {
		enc := encode(e)
		if e.Seq != uint64(i+1) || !bytes.Equal(e.Prev, prev) {
			return nil, fail(ErrAuditBroken, "audit entry %d does not chain to the entry before it; no receipt is signed for a broken log", i+1)
		}
		if e.Seq == from {
			p.Prev = clone(prev)
		}
		prev = sha256sum(enc)
		if e.Seq >= from && e.Seq <= to {
			if size += len(enc); size > MaxReceiptSize {
				return nil, receiptTooLarge(from, to)
			}
			p.Entries = append(p.Entries, enc)
			p.Head = prev
		}
	}
	out, err := bundle.SignObject(bundle.MediaTypeReceipt, encode(p), []ed25519.PrivateKey{site})
	if err == nil && len(out) > MaxReceiptSize {
		return nil, receiptTooLarge(from, to)
	}
	return out, err
}

// receiptTooLarge is BuildReceipt's refusal of a range whose receipt
// would pass MaxReceiptSize, which VerifyReceipt refuses to read
// (docs/SPEC-DECISIONS.md AUDIT-4).
func receiptTooLarge(from, to uint64) error {
	return fail(ErrInvalidReceipt, "the entries %d..%d take more than the %d bytes a receipt may hold: export them in smaller ranges", from, to, MaxReceiptSize)
}

// VerifyReceipt checks a receipt (docs/FORMAT.md §20) against the site key
// the verifier expects: one COSE_Sign of the receipt content type, one
// signature that verifies with the key of its kid, the kid equal to the
// payload's site and to site, a closed deterministic payload, and entries
// that chain: consecutive sequence numbers from first_seq, the first's prev
// equal to prev (32 zero bytes when first_seq is 1), each next prev the
// SHA-256 of the entry before, and the SHA-256 of the last equal to head.
// Without site (nil) it fails with site_key_required, naming the key the
// receipt claims: anyone can sign a well-formed receipt with a key of
// their own.
func VerifyReceipt(data []byte, site ed25519.PublicKey) (*Receipt, error) {
	r, err := checkReceipt(data, site)
	if err != nil {
		return nil, err
	}
	if site == nil {
		return nil, fail(ErrSiteKeyRequired, "the receipt is signed by %s, and nothing says that is the site's key: verify it against the site's public key (receipt verify --site PUB)", r.Site)
	}
	return r, nil
}

// checkReceipt is VerifyReceipt without the requirement of a site key:
// with site nil it checks everything but who the site is.
func checkReceipt(data []byte, site ed25519.PublicKey) (*Receipt, error) {
	if len(data) > MaxReceiptSize {
		return nil, fail(ErrInvalidReceipt, "receipt is larger than %d bytes", MaxReceiptSize)
	}
	obj, err := bundle.DecodeObject(data, bundle.MediaTypeReceipt)
	if err != nil {
		return nil, fail(ErrInvalidReceipt, "not a signed receipt").WithCause(err)
	}
	if len(obj.Signatures) != 1 {
		return nil, fail(ErrInvalidReceipt, "a receipt carries exactly one signature, by the site key")
	}
	// Who signed is judged before the signature is checked or anything
	// the signer wrote is read: a receipt by a key other than the expected
	// site's costs the verifier no more than its COSE structure
	// (docs/SPEC-DECISIONS.md AUDIT-3). The key is named in its canonical
	// form, never as the kid's bytes.
	key, ok := bundle.KeyFromKID(obj.Signatures[0].KID)
	if !ok {
		return nil, fail(ErrInvalidReceipt, "the receipt's kid is not an Ed25519 did:key")
	}
	if site != nil && !bytes.Equal(site, key) {
		return nil, fail(ErrInvalidReceipt, "the receipt is signed by %s, not by the expected site key", amp.DIDKey(key))
	}
	if err := obj.VerifyAll(); err != nil {
		return nil, fail(ErrInvalidReceipt, "the receipt's signature does not verify").WithCause(err)
	}
	var p receiptPayload
	if err := decode(obj.Payload, &p); err != nil || !bytes.Equal(encode(p), obj.Payload) {
		return nil, fail(ErrInvalidReceipt, "the receipt payload is not in its one allowed form")
	}
	switch {
	case p.Format != ReceiptFormat:
		return nil, fail(ErrInvalidReceipt, "unknown receipt format")
	case p.Site != obj.Signatures[0].KID:
		return nil, fail(ErrInvalidReceipt, "the receipt is signed by another key than the site it names")
	case len(p.Entries) == 0 || p.FirstSeq < 1:
		return nil, fail(ErrInvalidReceipt, "a receipt holds at least one entry, numbered from 1")
	case p.FirstSeq-1 > math.MaxUint64-uint64(len(p.Entries)):
		// first_seq + n - 1 would wrap: entries numbered 0, 1, … after
		// the largest (docs/SPEC-DECISIONS.md AUDIT-5).
		return nil, fail(ErrInvalidReceipt, "the receipt's %d entries from first_seq %d are numbered past %d", len(p.Entries), p.FirstSeq, uint64(math.MaxUint64))
	case len(p.Prev) != sha256.Size || len(p.Head) != sha256.Size:
		return nil, fail(ErrInvalidReceipt, "prev and head are 32-byte SHA-256 values")
	case p.FirstSeq == 1 && !bytes.Equal(p.Prev, make([]byte, sha256.Size)):
		return nil, fail(ErrInvalidReceipt, "the first entry of a log chains to 32 zero bytes")
	}
	if _, err := time.Parse(time.RFC3339, p.IssuedAt); err != nil {
		return nil, fail(ErrInvalidReceipt, "issued_at is not an RFC 3339 time")
	}
	r := &Receipt{Site: p.Site, SiteKey: key, IssuedAt: p.IssuedAt, FirstSeq: p.FirstSeq, Prev: p.Prev, Head: p.Head}
	prev := p.Prev
	for i, enc := range p.Entries {
		var e AuditEntry
		if err := decode(enc, &e); err != nil || !bytes.Equal(encode(e), enc) {
			return nil, fail(ErrInvalidReceipt, "receipt entry %d is not an audit entry in its one allowed form", i+1)
		}
		if !KnownAuditAction(e.Action) {
			return nil, fail(ErrInvalidReceipt, "receipt entry %d (seq %d) has an action %s does not define (docs/FORMAT.md §20.1 lists them)", i+1, e.Seq, ReceiptFormat)
		}
		if e.Seq != p.FirstSeq+uint64(i) {
			return nil, fail(ErrInvalidReceipt, "receipt entry %d has sequence number %d, want %d", i+1, e.Seq, p.FirstSeq+uint64(i))
		}
		if !bytes.Equal(e.Prev, prev) {
			return nil, fail(ErrInvalidReceipt, "receipt entry %d (seq %d) does not chain to the entry before it", i+1, e.Seq)
		}
		prev = sha256sum(enc)
		r.Entries = append(r.Entries, e)
	}
	if !bytes.Equal(prev, p.Head) {
		return nil, fail(ErrInvalidReceipt, "the last entry does not hash to the receipt's head")
	}
	return r, nil
}
