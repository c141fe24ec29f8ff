package amp

import "fmt"

// Type is an AMP message type code (RFC 001 §4.3). The wire field `typ` is a
// CBOR uint; values outside the registry are kept as received so that they
// can be reported, and are refused with 1005 by Receive.
type Type uint64

// Message type codes of RFC 001 §4.3.
const (
	TypePing            Type = 0x01
	TypePong            Type = 0x02
	TypeAck             Type = 0x03
	TypeProcOK          Type = 0x04
	TypeProcFail        Type = 0x05
	TypeContactRequest  Type = 0x06
	TypeContactResponse Type = 0x07
	TypeContactRevoke   Type = 0x08
	TypeProcessing      Type = 0x09
	TypeProgress        Type = 0x0A
	TypeInputRequired   Type = 0x0B
	TypeError           Type = 0x0F

	TypeMessage     Type = 0x10
	TypeRequest     Type = 0x11
	TypeResponse    Type = 0x12
	TypeStreamStart Type = 0x13
	TypeStreamData  Type = 0x14
	TypeStreamEnd   Type = 0x15
	TypeBatch       Type = 0x16

	TypeCapQuery   Type = 0x20
	TypeCapDeclare Type = 0x21
	TypeCapInvoke  Type = 0x22
	TypeCapResult  Type = 0x23

	TypeDocSend    Type = 0x30
	TypeDocRequest Type = 0x31

	TypeCredIssue   Type = 0x40
	TypeCredRequest Type = 0x41
	TypeCredPresent Type = 0x42
	TypeCredVerify  Type = 0x43

	TypeDelegGrant  Type = 0x50
	TypeDelegRevoke Type = 0x51
	TypeDelegQuery  Type = 0x52

	TypePresence      Type = 0x60
	TypePresenceQuery Type = 0x61
	TypePresenceSub   Type = 0x62
	TypePresenceUnsub Type = 0x63

	TypeHello       Type = 0x70
	TypeHelloAck    Type = 0x71
	TypeHelloReject Type = 0x72

	TypeExtension Type = 0xF0
)

// typeNames is the registry of RFC 001 §4.3, indexed by type code: one
// entry per registered type, "" for the codes left unregistered. It is a
// table, not a switch, so that registering a type is one line.
var typeNames = [...]string{
	TypePing:            "PING",
	TypePong:            "PONG",
	TypeAck:             "ACK",
	TypeProcOK:          "PROC_OK",
	TypeProcFail:        "PROC_FAIL",
	TypeContactRequest:  "CONTACT_REQUEST",
	TypeContactResponse: "CONTACT_RESPONSE",
	TypeContactRevoke:   "CONTACT_REVOKE",
	TypeProcessing:      "PROCESSING",
	TypeProgress:        "PROGRESS",
	TypeInputRequired:   "INPUT_REQUIRED",
	TypeError:           "ERROR",
	TypeMessage:         "MESSAGE",
	TypeRequest:         "REQUEST",
	TypeResponse:        "RESPONSE",
	TypeStreamStart:     "STREAM_START",
	TypeStreamData:      "STREAM_DATA",
	TypeStreamEnd:       "STREAM_END",
	TypeBatch:           "BATCH",
	TypeCapQuery:        "CAP_QUERY",
	TypeCapDeclare:      "CAP_DECLARE",
	TypeCapInvoke:       "CAP_INVOKE",
	TypeCapResult:       "CAP_RESULT",
	TypeDocSend:         "DOC_SEND",
	TypeDocRequest:      "DOC_REQUEST",
	TypeCredIssue:       "CRED_ISSUE",
	TypeCredRequest:     "CRED_REQUEST",
	TypeCredPresent:     "CRED_PRESENT",
	TypeCredVerify:      "CRED_VERIFY",
	TypeDelegGrant:      "DELEG_GRANT",
	TypeDelegRevoke:     "DELEG_REVOKE",
	TypeDelegQuery:      "DELEG_QUERY",
	TypePresence:        "PRESENCE",
	TypePresenceQuery:   "PRESENCE_QUERY",
	TypePresenceSub:     "PRESENCE_SUB",
	TypePresenceUnsub:   "PRESENCE_UNSUB",
	TypeHello:           "HELLO",
	TypeHelloAck:        "HELLO_ACK",
	TypeHelloReject:     "HELLO_REJECT",
	TypeExtension:       "EXTENSION",
}

// typeName returns the registry name of t, or "" when t is not registered.
func typeName(t Type) string {
	if t >= Type(len(typeNames)) {
		return ""
	}
	return typeNames[t]
}

// Known reports whether t is a registered type code of RFC 001 §4.3.
func (t Type) Known() bool { return typeName(t) != "" }

// Name returns the registry name ("CAP_INVOKE"), or "UNKNOWN" when t is not
// registered.
func (t Type) Name() string {
	if n := typeName(t); n != "" {
		return n
	}
	return "UNKNOWN"
}

// String returns "0x22 CAP_INVOKE".
func (t Type) String() string { return fmt.Sprintf("0x%02x %s", uint64(t), t.Name()) }

// Types returns every registered type code in ascending order.
func Types() []Type {
	var out []Type
	for t := Type(0); t <= 0xff; t++ {
		if t.Known() {
			out = append(out, t)
		}
	}
	return out
}

// IsHandshake reports whether t is HELLO, HELLO_ACK or HELLO_REJECT, which
// always travel with v = 1 (RFC 001 §13.1).
func (t Type) IsHandshake() bool {
	return t == TypeHello || t == TypeHelloAck || t == TypeHelloReject
}
