// Discovery: which Gateway API kinds the API server serves, looked for again until each is.

package kubesource

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/backoff"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// discoveryRetry is the first wait after a failed first discovery; it doubles up to the
// discovery interval.
const discoveryRetry = 500 * time.Millisecond

// discoveryLoop looks for the Gateway API kinds not watched yet, at once and then every
// interval (sooner, backing off, while the first discovery fails, and at once when the API
// server is ready again: a writer started during one API server restart and hit by the next
// would otherwise wait out its back-off before its informers start).
func (w *Watcher) discoveryLoop(ctx context.Context) {
	first := true
	retry := backoff.New(min(discoveryRetry, w.interval), w.interval)
	for {
		recovered := w.health.recovered() // before asking: a recovery during discover wakes the wait
		if w.discover(ctx) && first {
			first = false
			close(w.discovered)
		}
		if first {
			retry.Wait(ctx, recovered)
		} else {
			t := time.NewTimer(w.interval)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// discover asks the API server which Gateway API kinds it serves, starts an informer for each
// served kind not watched yet and reports the kinds that are not served. It returns false when
// some answer could not be had (an error other than NotFound).
func (w *Watcher) discover(ctx context.Context) bool {
	answers := groupVersions{}
	complete := true
	var failed error
	defer func() { w.reportDiscovery(ctx, failed) }()
	for _, gk := range w.discoveredKinds() {
		if ctx.Err() != nil {
			return false
		}
		if w.kind(gk.kind) != nil || (gk.route && !w.opts.watches(gk.kind)) {
			continue
		}
		version, err := w.servedVersion(ctx, gk, answers)
		if err != nil {
			failed, complete = err, false
			continue
		}
		if version != "" {
			w.startInformer(ctx, gk.kind, version, gk.route, gk.builder(ctx, w, version), w.namespacesOf(gk.kind))
		}
		w.reportServed(gk, version)
	}
	return complete
}

// servedVersion is the first of gk's versions the API server serves, "" when it is known to
// serve none; an error when that cannot be told yet.
func (w *Watcher) servedVersion(ctx context.Context, gk gatewayKind, answers groupVersions) (string, error) {
	for _, v := range gk.versions {
		a := answers.lookup(ctx, w, gk.groupName()+"/"+v)
		if a.err != nil {
			return "", fmt.Errorf("discovery of %s/%s: %w", gk.groupName(), v, a.err)
		}
		if a.resources[gk.resource] {
			return v, nil
		}
		if a.notFound {
			// A 404 is no proof: an API server that is starting, or a front before it,
			// answers it for a group it serves. Only the CRD read back settles it.
			if err := w.confirmAbsent(ctx, gk, v); err != nil {
				return "", err
			}
		}
	}
	return "", nil
}

// groupVersions are the API server's answers for the group versions asked so far in one
// discovery, each asked once.
type groupVersions map[string]groupVersion

type groupVersion struct {
	resources map[string]bool
	notFound  bool // the API server answered 404 for the group version
	err       error
}

// lookup asks the API server for gv's resources, once per discovery.
func (answers groupVersions) lookup(ctx context.Context, w *Watcher, gv string) groupVersion {
	if a, ok := answers[gv]; ok {
		return a
	}
	a := groupVersion{resources: map[string]bool{}}
	// A black-holed API server would hold the discovery forever (its context ends only at
	// Stop): bound each request so that the loop retries instead.
	rctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	list, err := w.resources(rctx, gv)
	cancel()
	switch {
	case apierrors.IsNotFound(err):
		a.notFound = true
	case err != nil:
		a.err = err
	default:
		for _, r := range list.APIResources {
			a.resources[r.Name] = true
		}
	}
	answers[gv] = a
	return a
}

// confirmAbsent checks a 404 of discovery for gk's group in version v against gk's CRD: nil
// when the CRD is absent or does not serve v (the kind is known not to be served in v), an
// error when it serves v (discovery is not complete yet: look again soon; until then the kind
// is neither served nor absent, and nothing of it is deleted). Without the right to read CRDs
// the 404 is taken as it is, and the log says once that absence cannot be confirmed.
func (w *Watcher) confirmAbsent(ctx context.Context, gk gatewayKind, v string) error {
	if w.crdServes == nil {
		return nil
	}
	name := gk.resource + "." + gk.groupName()
	rctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	serves, err := w.crdServes(rctx, name, v)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err):
		w.crdForbidden.Do(func() {
			log.Warningf("Cannot read CRD %s to confirm that discovery's 404 means it is absent (grant get on customresourcedefinitions): taking the 404 as absence", name)
		})
		return nil
	case err != nil:
		return fmt.Errorf("discovery answered 404 for %s/%s, and reading CRD %s to confirm it failed: %w", gk.groupName(), v, name, err)
	case serves:
		return fmt.Errorf("discovery answered 404 for %s/%s, but CRD %s serves %s: the API server's discovery is not complete yet", gk.groupName(), v, name, v)
	}
	return nil
}

// reportDiscovery logs when discovery starts failing and when it works again, once per change
// rather than on every retry (every 0.5 s to DiscoveryInterval while it lasts). failed is the
// last discovery's error, nil when every answer was had. A discovery cut short by Stop changes
// nothing.
func (w *Watcher) reportDiscovery(ctx context.Context, failed error) {
	if ctx.Err() != nil {
		return
	}
	w.discoveryFailing.Set(failed != nil, func(bool) {
		if failed != nil {
			w.health.warn("Gateway API discovery failed, retrying (logged again only when it works): %v", failed)
		} else {
			w.health.info("Gateway API discovery works again")
		}
	})
}

// kindServed is what discovery found of a kind: the version served, "" for none. known
// tells it from the zero state, a kind not discovered yet, whose first result is news.
type kindServed struct {
	version string
	known   bool
}

// reportServed logs and reports a kind's discovery result when it differs from the last one.
func (w *Watcher) reportServed(gk gatewayKind, version string) {
	w.served.Set(gk.kind, kindServed{version: version, known: true}, func(prev kindServed) {
		switch {
		case version == "":
			log.Infof("%s is not served by the API server (no CRD %s.%s): skipped; looking again every %s",
				gk.kind, gk.resource, gk.groupName(), w.interval)
		case prev.known:
			log.Infof("%s is now served (%s/%s): watching it", gk.kind, gk.groupName(), version)
		}
		w.observer.KindServed(gk.kind, version, version != "")
	})
}

// DiscoveredKinds returns the kinds whose KindServed a Watcher with these options reports: the
// Gateway API kinds it looks for (the route kinds among them only when asked for) and
// DNSEndpoint when asked for. An observer can create their series before the first discovery.
func (o Options) DiscoveredKinds() []string {
	var out []string
	for _, gk := range append(gatewayKinds[:len(gatewayKinds):len(gatewayKinds)], dnsEndpointKind) {
		if !gk.route && gk.dynamic == nil || o.watches(gk.kind) {
			out = append(out, gk.kind)
		}
	}
	return out
}

// SourceKinds returns the kinds of the objects a Watcher with these options reads names from,
// those a Rejection can be reported on: DiscoveredKinds, and Ingress and Service when asked for.
func (o Options) SourceKinds() []string {
	out := o.DiscoveredKinds()
	for _, k := range []string{source.KindIngress, source.KindService} {
		if o.watches(k) {
			out = append(out, k)
		}
	}
	return out
}
