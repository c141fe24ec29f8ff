package amp

// ValidErrName reports whether s can be printed as an error name that
// came from elsewhere (a peer's answer, a file another process wrote):
// 1 to 64 bytes of a-z, 0-9 and _. A name that fails is never echoed; the
// caller says instead that the name was unusable.
func ValidErrName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < 'a' || s[i] > 'z') && s[i] != '_' && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}
