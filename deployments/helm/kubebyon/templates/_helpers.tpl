{{/* The release's objects are named <fullname>-<component>. */}}
{{- define "kubebyon.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kubebyon.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kubebyon
{{- end -}}

{{/* selectorLabels takes (list $ "component"). */}}
{{- define "kubebyon.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ $.Chart.Name }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* componentLabels takes (list $ "component"). */}}
{{- define "kubebyon.componentLabels" -}}
{{ include "kubebyon.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "kubebyon.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "kubebyon.serviceAccountName" -}}
{{ .Values.serviceAccount.name | default (include "kubebyon.fullname" .) }}
{{- end -}}

{{- define "kubebyon.apiURL" -}}
http://{{ include "kubebyon.fullname" . }}-api.{{ .Release.Namespace }}.svc:8080
{{- end -}}

{{/* The Secret the chart makes for the database URL and the key. */}}
{{- define "kubebyon.secretName" -}}
{{ include "kubebyon.fullname" . }}
{{- end -}}

{{- define "kubebyon.databaseSecret" -}}
{{- if .Values.database.existingSecret -}}
name: {{ .Values.database.existingSecret }}
key: {{ .Values.database.existingSecretKey }}
{{- else -}}
{{- if not .Values.database.url -}}
{{- fail "database.url or database.existingSecret is required: PostgreSQL is not in the chart (README.md shows CloudNativePG)" -}}
{{- end -}}
name: {{ include "kubebyon.secretName" . }}
key: database-url
{{- end -}}
{{- end -}}

{{- define "kubebyon.secretKeySecret" -}}
{{- if .Values.secretKey.existingSecret -}}
name: {{ .Values.secretKey.existingSecret }}
key: {{ .Values.secretKey.existingSecretKey }}
{{- else -}}
{{- if not .Values.secretKey.value -}}
{{- fail "secretKey.value or secretKey.existingSecret is required: make a key with head -c 32 /dev/urandom | base64, and keep a copy" -}}
{{- end -}}
name: {{ include "kubebyon.secretName" . }}
key: secret-key
{{- end -}}
{{- end -}}

{{- define "kubebyon.edgeTokenSecret" -}}
{{- if .Values.edgeToken.existingSecret -}}
name: {{ .Values.edgeToken.existingSecret }}
key: {{ .Values.edgeToken.existingSecretKey }}
{{- else -}}
{{- if not .Values.edgeToken.value -}}
{{- fail "edgeToken.value or edgeToken.existingSecret is required for the edge and the route agent: an admin makes the token under Admin → Edge" -}}
{{- end -}}
name: {{ include "kubebyon.fullname" . }}-edge-token
key: token
{{- end -}}
{{- end -}}

{{/* The database URL alone (migrations). */}}
{{- define "kubebyon.databaseEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- include "kubebyon.databaseSecret" . | nindent 6 }}
# The data directory holds nothing with an external database, but must be
# writable: an emptyDir.
- name: KUBEBYON_DATA_DIR
  value: /data
- name: KUBEBYON_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: KUBEBYON_LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
{{- end -}}

{{/* What the API and the workers share. */}}
{{- define "kubebyon.platformEnv" -}}
{{ include "kubebyon.databaseEnv" . }}
- name: KUBEBYON_SECRET_KEY
  valueFrom:
    secretKeyRef:
      {{- include "kubebyon.secretKeySecret" . | nindent 6 }}
- name: KUBEBYON_BASE_URL
  value: {{ required "baseURL is required: the console's public URL, such as https://kubebyon.example.com" .Values.baseURL | quote }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Every pod not on the host network runs as the image's user. */}}
{{- define "kubebyon.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "kubebyon.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Writable directories on a read-only root filesystem. */}}
{{- define "kubebyon.scratchMounts" -}}
- name: data
  mountPath: /data
- name: tmp
  mountPath: /tmp
{{- end -}}

{{- define "kubebyon.scratchVolumes" -}}
- name: data
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- end -}}
