package amp

import (
	"encoding/json"
	"strings"
)

// RelayServiceType is the DID document service type that names a relay
// trusted to acknowledge messages for the document's subject (RFC 001
// §16.1: a relay ACK must come from a relay listed in the sender's or the
// recipient's DID document as an AgentMessagingRelay service).
const RelayServiceType = "AgentMessagingRelay"

// Caps on the services of a DID document.
const (
	maxDIDServices     = 64
	maxServiceTypes    = 8
	maxServiceEndpoint = 16
	maxDIDRelays       = 64
	maxServiceText     = 2048
)

// jsonService mirrors one W3C DID Core service entry.
type jsonService struct {
	ID       string          `json:"id"`
	Type     json.RawMessage `json:"type"`
	Endpoint json.RawMessage `json:"serviceEndpoint"`
}

// parseServices checks every service entry of a document (id, type and
// serviceEndpoint present and of the DID Core shapes, within the caps) and
// returns the bare DIDs of its relays: those an AgentMessagingRelay
// service names as its serviceEndpoint: a DID string, an array of them
// (URLs beside them are ignored), or a map (or an array of maps) whose
// "uri" is a DID or whose "routingKeys" are DID URLs. A relay service that
// names no DID is refused: the operator meant a relay and none would be
// trusted. The serviceEndpoint of a service of another type, which
// nothing reads, is held to the shapes of DID Core §5.4 alone (a string,
// a map of any members, or a set of 1 to 16 of these;
// docs/SPEC-DECISIONS.md AMP-25).
func parseServices(docID string, raws []json.RawMessage) ([]string, error) {
	if len(raws) > maxDIDServices {
		return nil, errDIDDoc("did document lists more than %d services", maxDIDServices)
	}
	var relays []string
	seen := map[string]bool{}
	ids := map[string]bool{}
	for _, raw := range raws {
		var s jsonService
		if err := json.Unmarshal(raw, &s); err != nil || s.ID == "" || len(s.ID) > maxServiceText || s.Type == nil || s.Endpoint == nil {
			return nil, errDIDDoc("did document has a service without an id, a type and a serviceEndpoint")
		}
		id := s.ID
		if strings.HasPrefix(id, "#") {
			id = docID + id
		}
		if ids[id] {
			return nil, errDIDDoc("did document defines a service id twice")
		}
		ids[id] = true
		types, err := serviceTypes(s.Type)
		if err != nil {
			return nil, err
		}
		isRelay := false
		for _, t := range types {
			isRelay = isRelay || t == RelayServiceType
		}
		if !isRelay {
			if err := otherEndpoint(s.Endpoint); err != nil {
				return nil, err
			}
			continue
		}
		dids, err := endpointDIDs(s.Endpoint)
		if err != nil {
			return nil, err
		}
		if len(dids) == 0 {
			return nil, errDIDDoc("did document has an %s service that names no relay did", RelayServiceType)
		}
		for _, d := range dids {
			if !seen[d] {
				if len(relays) >= maxDIDRelays {
					return nil, errDIDDoc("did document names more than %d relays", maxDIDRelays)
				}
				seen[d] = true
				relays = append(relays, d)
			}
		}
	}
	return relays, nil
}

// serviceTypes reads a service type: a string or a non-empty array of
// strings.
func serviceTypes(raw json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" || len(one) > maxServiceText {
			return nil, errDIDDoc("did document has a service with an empty or overlong type")
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil || len(many) == 0 || len(many) > maxServiceTypes {
		return nil, errDIDDoc("did document has a service type that is not a string or a short array of strings")
	}
	for _, t := range many {
		if t == "" || len(t) > maxServiceText {
			return nil, errDIDDoc("did document has a service with an empty or overlong type")
		}
	}
	return many, nil
}

// otherEndpoint checks the serviceEndpoint of a service that is not a
// relay: a string of 1 to maxServiceText bytes, a map (its members are
// not read; the document's caps bound them: size, nesting, and the
// member checks of checkDIDJSON), or an array of 1 to maxServiceEndpoint
// of these (DID Core §5.4). Anything else (null, a number, a boolean, an
// empty array, an array in an array) is refused.
func otherEndpoint(raw json.RawMessage) error {
	list := []json.RawMessage{raw}
	if len(raw) > 0 && raw[0] == '[' {
		list = nil
		if json.Unmarshal(raw, &list) != nil || len(list) == 0 || len(list) > maxServiceEndpoint {
			return errDIDDoc("did document has a serviceEndpoint array that is empty or longer than %d", maxServiceEndpoint)
		}
	}
	for _, item := range list {
		if len(item) > 0 && item[0] == '{' {
			continue
		}
		var s string
		if json.Unmarshal(item, &s) != nil {
			return errDIDDoc("did document has a serviceEndpoint that is not a string, a map, or an array of them")
		}
		if s == "" || len(s) > maxServiceText {
			return errDIDDoc("did document has an empty or overlong serviceEndpoint")
		}
	}
	return nil
}

// endpointDIDs reads a serviceEndpoint (a string, a map, or an array of
// them) and returns the bare DIDs it names.
func endpointDIDs(raw json.RawMessage) ([]string, error) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		if len(list) == 0 || len(list) > maxServiceEndpoint {
			return nil, errDIDDoc("did document has a serviceEndpoint array that is empty or longer than %d", maxServiceEndpoint)
		}
	} else {
		list = []json.RawMessage{raw}
	}
	var out []string
	for _, item := range list {
		var s string
		if json.Unmarshal(item, &s) == nil {
			d, err := endpointText(s)
			if err != nil {
				return nil, err
			}
			if d != "" {
				out = append(out, d)
			}
			continue
		}
		m, err := endpointMap(item)
		if err != nil {
			return nil, err
		}
		if m.URI != nil {
			d, err := endpointText(*m.URI)
			if err != nil {
				return nil, err
			}
			if d != "" {
				out = append(out, d)
			}
		}
		for _, k := range m.RoutingKeys {
			if !ValidDID(k) {
				return nil, errDIDDoc("did document has a routing key that is not a did url")
			}
			out = append(out, BareDID(k))
		}
	}
	return out, nil
}

// relayMap is the map of a relay's serviceEndpoint.
type relayMap struct {
	URI         *string  `json:"uri"`
	RoutingKeys []string `json:"routingKeys"`
}

// endpointMap reads the map of a relay's serviceEndpoint: uri, a string,
// or routingKeys, an array of at most maxServiceEndpoint strings, counted
// by the walk of checkDIDJSON before they are decoded (didObject.list,
// docs/SPEC-DECISIONS.md AMP-29, AMP-30).
func endpointMap(item json.RawMessage) (relayMap, error) {
	var out relayMap
	if len(item) > 0 && item[0] == '{' {
		w := didJSON{data: item}
		if err := w.value(didRelayMap, didList{}); err != nil {
			return out, err
		}
	}
	if err := json.Unmarshal(item, &out); err != nil || (out.URI == nil && out.RoutingKeys == nil) {
		return out, errDIDDoc("did document has a serviceEndpoint that is not a string, a map with uri or routingKeys, or an array of them")
	}
	return out, nil
}

// endpointText checks one endpoint string and returns its bare DID, or ""
// for a URI that is not a DID.
func endpointText(s string) (string, error) {
	switch {
	case s == "" || len(s) > maxServiceText:
		return "", errDIDDoc("did document has an empty or overlong serviceEndpoint")
	case strings.HasPrefix(s, "did:"):
		if !ValidDID(s) {
			return "", errDIDDoc("did document has a serviceEndpoint that starts like a did but is not one")
		}
		return BareDID(s), nil
	}
	return "", nil
}
