{{/* Every cluster-scoped name derives from the release and namespace, so two
     releases in two namespaces never collide. */}}
{{- define "pgop.fullname" -}}
{{- printf "%s-pgop" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "pgop.clusterScopedName" -}}
{{- printf "%s-%s-pgop" .Release.Namespace .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "pgop.labels" -}}
app.kubernetes.io/name: pgop
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
{{- define "pgop.selectorLabels" -}}
app.kubernetes.io/name: pgop
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "pgop.tlsSecret" -}}
{{- default (printf "%s-tls" (include "pgop.fullname" .)) .Values.certificate.secretName -}}
{{- end -}}
{{- define "pgop.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{/* caBundle for the webhook configurations: only CA certificates, never the leaf. */}}
{{- define "pgop.caBundle" -}}
{{- if eq .Values.certificate.mode "secret" -}}
{{- if .Values.certificate.caBundle -}}
{{- .Values.certificate.caBundle | b64enc -}}
{{- else -}}
{{- $s := lookup "v1" "Secret" .Release.Namespace (include "pgop.tlsSecret" .) -}}
{{- if and $s $s.data (index $s.data "ca.crt") -}}{{- index $s.data "ca.crt" -}}{{- end -}}
{{- end -}}
{{- else if eq .Values.certificate.mode "self" -}}
{{- /* self: keep what the certificate manager published (upgrade, re-apply). */ -}}
{{- $w := lookup "admissionregistration.k8s.io/v1" "ValidatingWebhookConfiguration" "" (include "pgop.clusterScopedName" .) -}}
{{- if and $w $w.webhooks -}}
{{- $first := index $w.webhooks 0 -}}
{{- if and $first.clientConfig $first.clientConfig.caBundle -}}{{- $first.clientConfig.caBundle -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
