{{/* Object names: the release name, or "<release>-hccl-exporter" when the
release name does not say hccl-exporter already. */}}
{{- define "hccl-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hccl-exporter.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "hccl-exporter.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "hccl-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "hccl-exporter.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels Helm tooling expects, on every object but never in selectors
that cannot change (the DaemonSet's). */}}
{{- define "hccl-exporter.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* Selector of the exporter pods: the labels of deploy/kubernetes plus the
release, so that two releases do not select each other's pods. */}}
{{- define "hccl-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hccl-exporter.name" . }}
app.kubernetes.io/component: exporter
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hccl-exporter.labels" -}}
{{ include "hccl-exporter.selectorLabels" . }}
app.kubernetes.io/part-of: hccl-exporter
{{ include "hccl-exporter.helmLabels" . }}
{{- end -}}

{{- define "hccl-exporter.webConfigEnabled" -}}
{{- if .Values.web.config -}}true{{- end -}}
{{- end -}}
