package kubesource

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/source"
)

// unacceptedRoute creates an HTTPRoute as a gateway controller first sees it: no status yet.
func (c *cluster) unacceptedRoute(namespace, name, host string, parent gatewayv1.ParentReference) *gatewayv1.HTTPRoute {
	c.t.Helper()
	r, err := c.gw.GatewayV1().HTTPRoutes(namespace).Create(c.ctx, &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}},
			Hostnames:       hostnames(host),
		},
	}, metav1.CreateOptions{})
	c.must(err)
	return r
}

// accept sets Accepted=True for the route's parent, as its gateway controller would.
func (c *cluster) accept(r *gatewayv1.HTTPRoute) {
	c.t.Helper()
	cur, err := c.gw.GatewayV1().HTTPRoutes(r.Namespace).Get(c.ctx, r.Name, metav1.GetOptions{})
	c.must(err)
	cur.Status.RouteStatus = acceptedBy(cur.Spec.ParentRefs...)
	_, err = c.gw.GatewayV1().HTTPRoutes(r.Namespace).UpdateStatus(c.ctx, cur, metav1.UpdateOptions{})
	c.must(err)
}

// A route its gateway controller has not accepted yet is normal work while the controller
// takes its usual second or two: no Event, no count. One that stays unaccepted is reported
// once its grace has passed, by the leading replica only, once however often the lead moves;
// source_rejected_names follows it while it lasts, on the leader.
func TestARejectionWaitingOnTheControllerIsReportedOnceItLastsAndByTheLeaderOnly(t *testing.T) {
	const grace = 2 * time.Second
	c := startCluster(t)
	c.namespace("infra", nil)
	c.namespace("apps", nil)
	c.gatewayClass()
	c.gateway(newGateway("infra", "gw", listener("http", gatewayv1.HTTPProtocolType, 80, "*.example.com", gatewayv1.NamespacesFromAll, nil)), "192.0.2.1")
	gw := parentRef("infra", "gw", "")

	// Two Watchers on one API server: that Stop leaves nothing behind is pinned for one
	// (watchAs); with two, a goroutine of the Gateway informers' watch was once seen to
	// outlive both Stops under load, not understood yet, so it is not asserted here.
	start := func(obs *recordingObserver) *Watcher {
		w, err := New(c.env.Config, Options{Observer: obs, DiscoveryInterval: 500 * time.Millisecond,
			ReportWhenLeading: true, PendingGrace: grace})
		c.must(err)
		c.must(w.Start(c.ctx))
		t.Cleanup(w.Stop)
		waitSynced(t, w)
		return w
	}
	leaderObs, standbyObs := newRecordingObserver(), newRecordingObserver()
	leader, standby := start(leaderObs), start(standbyObs)
	leader.SetLeading(true)

	quick := c.unacceptedRoute("apps", "quick", "quick.example.com", gw)
	stuckAt := time.Now()
	stuck := c.unacceptedRoute("apps", "stuck", "stuck.example.com", gw)
	time.AfterFunc(500*time.Millisecond, func() { c.accept(quick) })
	eventually(t, waitFor, "quick published once accepted", endpointIs(leader, "quick.example.com", "192.0.2.1"))

	kind, cause := source.KindHTTPRoute, source.CauseParentNotAccepted
	eventually(t, waitFor, "the lasting rejection counted", func() (bool, string) {
		return leaderObs.rejections(kind, cause) == 1, "not yet"
	})
	if waited := time.Since(stuckAt); waited < grace {
		t.Errorf("the lasting rejection was reported %v after the route came, before its grace of %v", waited, grace)
	}
	eventually(t, waitFor, "one Event on stuck", func() (bool, string) {
		return len(warningEvents(t, c.kube, "apps", kind, "stuck", string(cause))) == 1, "no Event yet"
	})
	if evs := warningEvents(t, c.kube, "apps", kind, "quick", string(cause)); len(evs) != 0 {
		t.Errorf("the route accepted within its grace got Events: %v", evs)
	}
	if n := leaderObs.rejecting(kind, cause); n != 1 {
		t.Errorf("rejected names on the leader %d, want 1", n)
	}

	// The lead moves away and back: the count follows it, the Event is not raised again.
	leader.SetLeading(false)
	eventually(t, waitFor, "no current count off the lead", func() (bool, string) { return leaderObs.rejecting(kind, cause) == 0, "still counted" })
	leader.SetLeading(true)
	eventually(t, waitFor, "counted again on the lead", func() (bool, string) { return leaderObs.rejecting(kind, cause) == 1, "not counted" })
	if n := leaderObs.rejections(kind, cause); n != 1 {
		t.Errorf("reported %d times across a change of lead, want once", n)
	}

	c.accept(stuck)
	eventually(t, waitFor, "no current count once accepted", func() (bool, string) { return leaderObs.rejecting(kind, cause) == 0, "still counted" })
	eventually(t, waitFor, "stuck published once accepted", endpointIs(standby, "stuck.example.com", "192.0.2.1"))
	if evs := warningEvents(t, c.kube, "apps", kind, "stuck", string(cause)); len(evs) != 1 || evs[0].Count != 1 {
		t.Errorf("Events on stuck: %+v, want one, raised once", evs)
	}
	if n := standbyObs.rejections(kind, cause); n != 0 {
		t.Errorf("the standby reported %d rejections, want none", n)
	}
}
