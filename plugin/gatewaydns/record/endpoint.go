package record

// Endpoint is one DNS name that the publish path wants to exist: the sources compute it from
// Kubernetes objects, the writer turns it into SkyDNS keys.
type Endpoint struct {
	// Name is the lower-cased, fully qualified DNS name without the trailing dot,
	// e.g. "app.eu1.openmcp.cluster" or "*.apps.eu1.openmcp.cluster".
	Name string
	// Targets are sorted and unique: IP addresses (A/AAAA) or exactly one host name (CNAME).
	Targets []string
	// Records are the name's TXT, SRV and MX records, sorted by canonical form and unique
	// (SortTyped). A name with a CNAME target has none (RFC 1034: a CNAME has no other data).
	Records []Typed
	// TTL in seconds; 0 means the plugin default.
	TTL uint32
	// Sources are the objects that asked for this name, sorted; a person reading a record
	// finds the object behind it from these.
	Sources []ObjectRef
	// Steering is this owner's policy for the name (zero: none), written into the values of
	// its Targets; TXT, SRV and MX records are not steered and carry none.
	Steering Steering
}

// ObjectRef names the Kubernetes object behind an endpoint.
type ObjectRef struct {
	Kind      string // "Gateway", "HTTPRoute", "Ingress", ...
	Namespace string
	Name      string
}

func (r ObjectRef) String() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }
