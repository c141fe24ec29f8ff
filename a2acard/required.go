package a2acard

import "github.com/ampbundle/ampbundle/internal/jcs"

// required checks that a card (its signatures and defaults removed) has
// the members a2a.proto marks REQUIRED, set (a REQUIRED array holds at
// least one element, A2A §5.7), and returns what Verified shows of it.
func required(card jcs.Object) (*Verified, error) {
	v := &Verified{}
	var err error
	if v.Name, err = reqString(card, "name"); err != nil {
		return nil, err
	}
	if v.Version, err = reqString(card, "version"); err != nil {
		return nil, err
	}
	if d, _ := card.Get("description"); !isString(d) {
		return nil, invalid("description")
	}
	if c, _ := card.Get("capabilities"); !isObject(c) {
		return nil, invalid("capabilities")
	}
	for _, name := range []string{"defaultInputModes", "defaultOutputModes"} {
		arr, err := reqArray(card, name)
		if err != nil {
			return nil, err
		}
		for _, x := range arr {
			if !isString(x) {
				return nil, invalid(name)
			}
		}
	}
	ifaces, err := reqArray(card, "supportedInterfaces")
	if err != nil {
		return nil, err
	}
	for _, x := range ifaces {
		o, _ := x.(jcs.Object)
		for _, name := range []string{"url", "protocolBinding", "protocolVersion"} {
			if _, err := reqString(o, name); err != nil {
				return nil, invalid("supportedInterfaces")
			}
		}
	}
	skills, err := reqArray(card, "skills")
	if err != nil {
		return nil, err
	}
	for _, x := range skills {
		id, err := skill(x)
		if err != nil {
			return nil, err
		}
		v.Skills = append(v.Skills, id)
	}
	return v, nil
}

func skill(x any) (string, error) {
	o, _ := x.(jcs.Object)
	id, err := reqString(o, "id")
	if err != nil {
		return "", invalid("skills")
	}
	for _, name := range []string{"name", "description"} {
		if v, _ := o.Get(name); !isString(v) {
			return "", invalid("skills")
		}
	}
	tags, err := reqArray(o, "tags")
	if err != nil {
		return "", invalid("skills")
	}
	for _, t := range tags {
		if !isString(t) {
			return "", invalid("skills")
		}
	}
	return id, nil
}

func invalid(member string) error {
	return fail(ErrInvalid, "the card's %s is missing, empty or of the wrong type", member)
}

func isString(v any) bool { _, ok := v.(string); return ok }

func isObject(v any) bool { _, ok := v.(jcs.Object); return ok }

// reqString returns a REQUIRED string member, non-empty.
func reqString(o jcs.Object, name string) (string, error) {
	v, _ := o.Get(name)
	s, ok := v.(string)
	if !ok || s == "" {
		return "", invalid(name)
	}
	return s, nil
}

// reqArray returns a REQUIRED array member, non-empty.
func reqArray(o jcs.Object, name string) ([]any, error) {
	v, _ := o.Get(name)
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, invalid(name)
	}
	return arr, nil
}
