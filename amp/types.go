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

// typeName returns the registry name of t, or "" when t is not registered.
func typeName(t Type) string {
	switch t {
	case TypePing:
		return "PING"
	case TypePong:
		return "PONG"
	case TypeAck:
		return "ACK"
	case TypeProcOK:
		return "PROC_OK"
	case TypeProcFail:
		return "PROC_FAIL"
	case TypeContactRequest:
		return "CONTACT_REQUEST"
	case TypeContactResponse:
		return "CONTACT_RESPONSE"
	case TypeContactRevoke:
		return "CONTACT_REVOKE"
	case TypeProcessing:
		return "PROCESSING"
	case TypeProgress:
		return "PROGRESS"
	case TypeInputRequired:
		return "INPUT_REQUIRED"
	case TypeError:
		return "ERROR"
	case TypeMessage:
		return "MESSAGE"
	case TypeRequest:
		return "REQUEST"
	case TypeResponse:
		return "RESPONSE"
	case TypeStreamStart:
		return "STREAM_START"
	case TypeStreamData:
		return "STREAM_DATA"
	case TypeStreamEnd:
		return "STREAM_END"
	case TypeBatch:
		return "BATCH"
	case TypeCapQuery:
		return "CAP_QUERY"
	case TypeCapDeclare:
		return "CAP_DECLARE"
	case TypeCapInvoke:
		return "CAP_INVOKE"
	case TypeCapResult:
		return "CAP_RESULT"
	case TypeDocSend:
		return "DOC_SEND"
	case TypeDocRequest:
		return "DOC_REQUEST"
	case TypeCredIssue:
		return "CRED_ISSUE"
	case TypeCredRequest:
		return "CRED_REQUEST"
	case TypeCredPresent:
		return "CRED_PRESENT"
	case TypeCredVerify:
		return "CRED_VERIFY"
	case TypeDelegGrant:
		return "DELEG_GRANT"
	case TypeDelegRevoke:
		return "DELEG_REVOKE"
	case TypeDelegQuery:
		return "DELEG_QUERY"
	case TypePresence:
		return "PRESENCE"
	case TypePresenceQuery:
		return "PRESENCE_QUERY"
	case TypePresenceSub:
		return "PRESENCE_SUB"
	case TypePresenceUnsub:
		return "PRESENCE_UNSUB"
	case TypeHello:
		return "HELLO"
	case TypeHelloAck:
		return "HELLO_ACK"
	case TypeHelloReject:
		return "HELLO_REJECT"
	case TypeExtension:
		return "EXTENSION"
	}
	return ""
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
