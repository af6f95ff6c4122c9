package plan

import "fmt"

// Policy is what a writer may do to its own keys.
type Policy int

const (
	// Sync creates, updates and deletes own keys.
	Sync Policy = iota
	// UpsertOnly creates and updates; a name that is no longer wanted keeps its records. An
	// update of a name still wanted replaces its records (the old target's key goes), as
	// external-dns's upsert-only does.
	UpsertOnly
	// CreateOnly only publishes names this owner holds no key for; it never updates or deletes.
	CreateOnly
)

// ParsePolicy reads "sync", "upsert-only" or "create-only".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "sync":
		return Sync, nil
	case "upsert-only":
		return UpsertOnly, nil
	case "create-only":
		return CreateOnly, nil
	}
	return Sync, fmt.Errorf("unknown policy %q: want sync, upsert-only or create-only", s)
}

func (p Policy) String() string {
	switch p {
	case Sync:
		return "sync"
	case UpsertOnly:
		return "upsert-only"
	case CreateOnly:
		return "create-only"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ConflictMode is what happens when several owners publish one name.
type ConflictMode int

const (
	// Shared: every owner publishes; the answer is the union of their targets.
	Shared ConflictMode = iota
	// Exclusive: the oldest claim wins; the others withdraw and report a Conflict.
	Exclusive
)

// ParseConflictMode reads "shared" or "exclusive".
func ParseConflictMode(s string) (ConflictMode, error) {
	switch s {
	case "shared":
		return Shared, nil
	case "exclusive":
		return Exclusive, nil
	}
	return Shared, fmt.Errorf("unknown conflict mode %q: want shared or exclusive", s)
}

func (m ConflictMode) String() string {
	if m == Exclusive {
		return "exclusive"
	}
	return "shared"
}
