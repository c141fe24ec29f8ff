package capability

import "strings"

// Limits of capability names (§4.1, this project's rules; see doc.go).
const (
	// MaxNameLen caps a whole capability name in bytes.
	MaxNameLen = 255
	// MaxLabelLen caps one namespace label in bytes (as a DNS label).
	MaxLabelLen = 63
	// MaxSlugLen caps the slug in bytes.
	MaxSlugLen = 64
)

// ValidateName checks a capability name against §4.1,
//
//	capability-name = <reverse-domain namespace> "." <slug>
//
// with this project's exact rules: a label is 1-63 bytes of [a-z0-9-], not
// starting or ending with "-"; the namespace is at least two labels joined by
// "."; the slug is the last dot-separated segment, 1-64 bytes of [a-z0-9_-]
// starting with [a-z0-9]; the whole name is at most 255 bytes. Uppercase is
// refused: names that differ only in case would look alike to people while
// comparing unequal (comparison stays bytewise and case-sensitive, §4.1).
//
// The error is 4001 invalid_name.
func ValidateName(name string) error {
	if why := nameProblem(name); why != "" {
		return badRequest(ErrInvalidName, "capability name %s", why)
	}
	return nil
}

// SplitName splits a valid capability name into its namespace and slug:
// "org.agentries.code-review" gives "org.agentries" and "code-review".
// It returns ValidateName's error for an invalid name.
func SplitName(name string) (namespace, slug string, err error) {
	if err := ValidateName(name); err != nil {
		return "", "", err
	}
	i := strings.LastIndexByte(name, '.')
	return name[:i], name[i+1:], nil
}

// ValidateNamespacePrefix checks a namespace prefix as used by InNamespace
// (trust scopes, for example): either "*", or one or more labels joined by
// "." (the label rules of ValidateName), optionally ending with ".". The
// error is 4001 invalid_name.
func ValidateNamespacePrefix(prefix string) error {
	if prefix == "*" {
		return nil
	}
	p := strings.TrimSuffix(prefix, ".")
	if p == "" {
		return badRequest(ErrInvalidName, "namespace prefix is empty")
	}
	if len(p) >= MaxNameLen {
		return badRequest(ErrInvalidName, "namespace prefix is longer than %d bytes", MaxNameLen-1)
	}
	if _, why := labelsProblem(p); why != "" {
		return badRequest(ErrInvalidName, "namespace prefix %s", why)
	}
	return nil
}

// InNamespace reports whether the capability name lies under the namespace
// prefix at a label boundary. "org.example" and "org.example." both match
// "org.example.x" and "org.example.sub.x", never "org.examples.x" and never
// "org.example" itself (a prefix names a namespace, and a namespace is not a
// capability). The prefix "*" matches every valid name. An invalid name or
// prefix matches nothing.
func InNamespace(name, prefix string) bool {
	if nameProblem(name) != "" {
		return false
	}
	if prefix == "*" {
		return true
	}
	if ValidateNamespacePrefix(prefix) != nil {
		return false
	}
	p := strings.TrimSuffix(prefix, ".")
	return len(name) > len(p)+1 && name[len(p)] == '.' && name[:len(p)] == p
}

// nameProblem returns why name is not a valid capability name, or "".
// The reason never contains the name.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > MaxNameLen:
		return "is longer than 255 bytes"
	}
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return "has no namespace"
	}
	if why := slugProblem(name[i+1:]); why != "" {
		return why
	}
	n, why := labelsProblem(name[:i])
	if why != "" {
		return why
	}
	if n < 2 {
		return "namespace needs at least two labels"
	}
	return ""
}

// slugProblem checks the slug: 1-64 bytes of [a-z0-9_-], first [a-z0-9].
func slugProblem(s string) string {
	switch {
	case s == "":
		return "has an empty slug"
	case len(s) > MaxSlugLen:
		return "has a slug longer than 64 bytes"
	case !lowerAlnum(s[0]):
		if isUpper(s[0]) {
			return "has an uppercase letter"
		}
		return "has a slug that does not start with [a-z0-9]"
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if lowerAlnum(c) || c == '-' || c == '_' {
			continue
		}
		if isUpper(c) {
			return "has an uppercase letter"
		}
		return "has a slug character outside [a-z0-9_-]"
	}
	return ""
}

// labelsProblem checks dot-joined labels and returns how many there are.
func labelsProblem(s string) (int, string) {
	n := 0
	for {
		i := strings.IndexByte(s, '.')
		label := s
		if i >= 0 {
			label = s[:i]
		}
		if why := labelProblem(label); why != "" {
			return 0, why
		}
		n++
		if i < 0 {
			return n, ""
		}
		s = s[i+1:]
	}
}

// labelProblem checks one label: 1-63 bytes of [a-z0-9-], no "-" at
// either end.
func labelProblem(l string) string {
	switch {
	case l == "":
		return "has an empty label"
	case len(l) > MaxLabelLen:
		return "has a label longer than 63 bytes"
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if lowerAlnum(c) || c == '-' {
			continue
		}
		if isUpper(c) {
			return "has an uppercase letter"
		}
		return "has a label character outside [a-z0-9-]"
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return "has a label that starts or ends with a hyphen"
	}
	return ""
}

func lowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

// ID is a capability id (§4.1): a capability name and one concrete version,
// written name ":" version ("org.agentries.code-review:2.1.0"). The zero ID
// is not an id; IsZero reports it. Two IDs are == exactly when their strings
// are identical.
type ID struct {
	Name    string
	Version Version
}

// ParseID parses "name:version". The name must pass ValidateName and the
// version ParseVersion. The error is 4001 invalid_id.
func ParseID(s string) (ID, error) {
	i := strings.IndexByte(s, ':')
	if i < 0 {
		return ID{}, badRequest(ErrInvalidID, "capability id has no version")
	}
	if why := nameProblem(s[:i]); why != "" {
		return ID{}, badRequest(ErrInvalidID, "capability id: name %s", why)
	}
	v, why := parseVersion(s[i+1:])
	if why != "" {
		return ID{}, badRequest(ErrInvalidID, "capability id: version %s", why)
	}
	return ID{Name: s[:i], Version: v}, nil
}

// String returns name ":" version, or "" for the zero ID.
func (id ID) String() string {
	if id.IsZero() {
		return ""
	}
	return id.Name + ":" + id.Version.String()
}

// IsZero reports whether id is the zero ID.
func (id ID) IsZero() bool { return id.Name == "" && id.Version.IsZero() }

// problem returns why id is not a valid id, or "".
func (id ID) problem() string {
	if why := nameProblem(id.Name); why != "" {
		return "name " + why
	}
	if id.Version.IsZero() {
		return "has no version"
	}
	return ""
}
