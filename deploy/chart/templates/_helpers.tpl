{{/* The labels every object carries: those of the stock CoreDNS objects it replaces. */}}
{{- define "gatewaydns.labels" -}}
k8s-app: kube-dns
{{- end }}

{{/* The image: repository@digest, or repository:tag. */}}
{{- define "gatewaydns.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
{{- end }}

{{/* The role, checked (values.schema.json checks it first; this holds without a schema). */}}
{{- define "gatewaydns.role" -}}
{{- if not (has .Values.role (list "workload" "central")) -}}
{{- fail (printf "role: %q is neither workload nor central" .Values.role) -}}
{{- end -}}
{{ .Values.role }}
{{- end }}

{{/* The etcd client URLs, every member: the Corefile's endpoint line. */}}
{{- define "gatewaydns.endpoints" -}}
{{- if not .Values.etcd.endpoints -}}
{{- fail "etcd.endpoints: list the central etcd's client URLs (every member), e.g. [https://etcd-0.platform:2379]" -}}
{{- end -}}
{{ join " " .Values.etcd.endpoints }}
{{- end }}

{{/* The Corefile: cluster.local as kubeadm's CoreDNS serves it, and the zone for the role. */}}
{{- define "gatewaydns.corefile" -}}
.:53 {
    errors
    health {
        lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
        max_concurrent 1000
    }
    cache 30 {
        disable success cluster.local
        disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
{{- if eq (include "gatewaydns.role" .) "central" }}
{{ .Values.zone }}:53 {{ .Values.zone }}:5353 {
    errors
    ready
    prometheus :9153
    gatewaydns {
        endpoint {{ include "gatewaydns.endpoints" . }}
{{- if .Values.etcd.tlsSecret }}
        tls /etc/gatewaydns/etcd/tls.crt /etc/gatewaydns/etcd/tls.key /etc/gatewaydns/etcd/ca.crt
{{- end }}
    }
    # loadbalance (its default policy) keeps the addresses of a name that several clusters
    # publish in a random order; gatewaydns's batched UDP path does the same for it, at 4 us of
    # CPU a question in bench phase A (bench/results/2026-11-28-phase-a.md). No log or cache
    # here: either turns the path off and costs 22-35 us a question.
    loadbalance
}
{{- else }}
{{ .Values.zone }}:53 {
    errors
    ready
    prometheus :9153
    gatewaydns {
        endpoint {{ include "gatewaydns.endpoints" . }}
{{- if .Values.etcd.tlsSecret }}
        tls /etc/gatewaydns/etcd/tls.crt /etc/gatewaydns/etcd/tls.key /etc/gatewaydns/etcd/ca.crt
{{- end }}
        owner {$GATEWAYDNS_OWNER}
        domain-filter {$GATEWAYDNS_DOMAIN}
{{- with .Values.sources }}
        sources {{ join " " . }}
{{- end }}
{{- if eq .Values.rbac.gatewaydns "namespaced" }}
        namespaces {{ join " " .Values.rbac.namespaces }}
        gateway-namespace {{ .Values.rbac.gatewayNamespace }}
        service-types {{ join " " .Values.rbac.serviceTypes }}
{{- end }}
        publish-only
    }
    forward . {$GATEWAYDNS_CENTRAL}
}
{{- end }}
{{- range $domain, $servers := .Values.stubDomains }}
{{ $domain }}:53 {
    errors
    cache 30
    forward . {{ join " " $servers }}
}
{{- end }}
{{- range .Values.extraServerBlocks }}
{{ include "gatewaydns.serverKeys" . }} {
{{- range .plugins }}
    {{ .name }}{{ with .parameters }} {{ . }}{{ end }}{{ if .configBlock }} {
        {{- .configBlock | trim | nindent 8 }}
    }{{ end }}
{{- end }}
}
{{- end }}
{{- end }}

{{/* A server block's keys, from the CoreDNS chart's `servers` entry: each zone with its scheme
and the block's port. */}}
{{- define "gatewaydns.serverKeys" -}}
{{- $port := .port | default 53 -}}
{{- $keys := list -}}
{{- range (.zones | default (list (dict "zone" "."))) -}}
{{- $keys = append $keys (printf "%s%s:%v" (.scheme | default "") .zone $port) -}}
{{- end -}}
{{ join " " $keys }}
{{- end }}
