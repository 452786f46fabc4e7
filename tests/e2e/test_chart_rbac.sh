#!/usr/bin/env bash
# e2e-timeout: 120
# The chart's RBAC, rendered with `helm template` (no control plane):
#  - watchNamespaces={a,b}: the reconciler's rules are a Role + RoleBinding in a and in b,
#    nothing reconciler-related is cluster-wide but list/watch of Nodes (drains; the other
#    ClusterRoles are the webhook configurations', pinned by resourceNames), no Secret access in the release namespace
#    beyond creating and, by name, reading the two certificate Secrets;
#  - watchNamespaces empty: the same rules as one ClusterRole;
#  - certificate.mode=secret: no certificate-manager rules at all;
#  - no "*", no configmaps, clusters themselves only patched (the restart annotations),
#    never updated, created or deleted;
#  - every rendered (scope, apiGroup, resource, verbs, resourceNames?) is a row of the table
#    in charts/pgop/README.md and every row is rendered (one list, kept true).
# The Helm-installed e2e tests (test_cluster_*) run Clusters with exactly these rules.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CHART=$(cd "$E2E_DIR/../../charts/pgop" && pwd)
README=$CHART/README.md
if ! command -v helm >/dev/null; then
	bin=${PGOP_E2E_BIN:-$("$E2E_DIR/build-k8s.sh" | tail -n 1)}
	PATH=$bin:$PATH
fi
command -v helm >/dev/null || e2e_fail "helm not built (tests/e2e/build-k8s.sh)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# rules FILE: one line per (role, resource):
#   KIND|NAME|NAMESPACE|APIGROUP|RESOURCE|VERBS|NAMES(yes/no)
# and one per binding: BINDING|KIND|NAME|NAMESPACE|ROLEKIND|ROLENAME|SUBJECT|SUBJECTNS
# The chart writes rules in flow style (apiGroups: [..]); anything else fails below.
rules() {
	awk '
	function list(s) { sub(/^[^[]*\[/, "", s); sub(/\].*$/, "", s); gsub(/[ "]/, "", s); return s }
	function flush(  n, i, r) {
		if (!inrule) return
		n = split(res, r, ",")
		if (n == 0 || verbs == "") { print "BAD|" kind "|" name "|rule without resources or verbs"; }
		for (i = 1; i <= n; i++) print kind "|" name "|" ns "|" grp "|" r[i] "|" verbs "|" (names != "" ? "yes" : "no")
		inrule = 0; res = verbs = names = grp = ""
	}
	function doc() {
		flush()
		if (kind ~ /Binding$/) print "BINDING|" kind "|" name "|" ns "|" rkind "|" rname "|" sname "|" sns
		kind = name = ns = rkind = rname = sname = sns = ""; sect = ""
	}
	/^---/ { doc(); next }
	/^kind: / { kind = $2; next }
	/^metadata:/ { sect = "meta"; next }
	/^roleRef:/ { sect = "ref"; next }
	/^subjects:/ { sect = "subj"; next }
	/^rules:/ { sect = "rules"; next }
	/^[a-z]/ { sect = "" }
	sect == "meta" && /^  name: / { name = $2 }
	sect == "meta" && /^  namespace: / { ns = $2 }
	sect == "ref" && /^  kind: / { rkind = $2 }
	sect == "ref" && /^  name: / { rname = $2 }
	sect == "subj" && /^ *(- )?name: / { sname = $NF }
	sect == "subj" && /^ *namespace: / { sns = $2 }
	sect == "rules" && /^  - apiGroups:/ { flush(); inrule = 1; grp = list($0) }
	sect == "rules" && /^    resources:/ { res = list($0) }
	sect == "rules" && /^    verbs:/ { verbs = list($0) }
	sect == "rules" && /^    resourceNames:/ { names = list($0) }
	sect == "rules" && /^  [a-z-]/ && !/^  - / { print "BAD|" kind "|" name "|unexpected rules line: " $0 }
	END { doc() }
	' "$1"
}

# table: the README rows as SCOPE|APIGROUP|RESOURCE|VERBS|NAMES(yes/no); core = "".
table() {
	sed -n '/<!-- rbac-table-begin -->/,/<!-- rbac-table-end -->/p' "$README" |
		awk -F'|' 'NR > 3 && /^\|/ {
			for (i = 2; i <= 6; i++) { gsub(/^ +| +$/, "", $i) }
			scope = $2; sub(/ \(self\)$/, "", scope)
			grp = ($3 == "core") ? "" : $3
			verbs = $5; gsub(/ /, "", verbs)
			print scope "|" grp "|" $4 "|" verbs "|" ($6 != "" ? "yes" : "no")
		}'
}

render() { # OUT ARGS...
	local out=$1
	shift
	helm template r1 "$CHART" -n rel --skip-tests "$@" >"$out.yaml" || e2e_fail "helm template $*"
	rules "$out.yaml" >"$out.rules"
	! grep '^BAD|' "$out.rules" || e2e_fail "unparsed RBAC in helm template $*"
	[ -s "$out.rules" ] || e2e_fail "no RBAC rendered by helm template $*"
}

# scoped FILE: the rendered rules as SCOPE|APIGROUP|RESOURCE|VERBS|NAMES, by role name.
scoped() {
	awk -F'|' '$1 != "BINDING" {
		if ($1 == "Role" && $2 == "r1-pgop-reconciler") s = "watched"
		else if ($1 == "ClusterRole" && $2 == "rel-r1-pgop") s = "watched"
		else if ($1 == "Role" && $2 == "r1-pgop" && $3 == "rel") s = "release"
		else if ($1 == "ClusterRole" && $2 == "rel-r1-pgop-webhooks") s = "cluster"
		else if ($1 == "ClusterRole" && $2 == "rel-r1-pgop-live-apiservice") s = "cluster"
		else if ($1 == "ClusterRole" && $2 == "rel-r1-pgop-nodes") s = "nodes"
		else if ($1 == "ClusterRole" && $2 ~ /^rel-r1-pgop-live-(view|edit)$/) s = "users"
		else s = "UNKNOWN:" $1 "/" $2 "/" $3
		print s "|" $4 "|" $5 "|" $6 "|" $7
	}' "$1" | sort -u
}

# binds FILE KIND NAME NS: a binding of KIND/NAME (in NS) to the operator's ServiceAccount.
binds() {
	grep -qx "BINDING|${2}Binding|$3|$4|$2|$3|r1-pgop|rel" "$1"
}

render "$tmp/ns" --set 'watchNamespaces={a,b}'
render "$tmp/all"
render "$tmp/secret" --set certificate.mode=secret --set 'watchNamespaces={a}'

# ---- namespaced: Roles in a and b, nothing reconciler-related cluster-wide -----------
for ns in a b; do
	grep -q "^Role|r1-pgop-reconciler|$ns|" "$tmp/ns.rules" || e2e_fail "no reconciler Role in namespace $ns"
	binds "$tmp/ns.rules" Role r1-pgop-reconciler "$ns" || e2e_fail "reconciler Role in $ns is not bound to r1-pgop"
	grep -q "^Role|r1-pgop-reconciler|$ns|postgresql.cnpg.io|clusters|" "$tmp/ns.rules" ||
		e2e_fail "reconciler Role in $ns does not cover clusters"
done
bad=$(awk -F'|' '$1 == "ClusterRole" && $2 !~ /^rel-r1-pgop-live-(view|edit)$/ &&
	!($2 == "rel-r1-pgop-nodes" && $4 == "" && $5 == "nodes" && $6 == "list,watch") &&
	(($2 != "rel-r1-pgop-webhooks" && $2 != "rel-r1-pgop-live-apiservice") || $7 != "yes")' "$tmp/ns.rules")
[ -z "$bad" ] || e2e_fail "namespaced mode: cluster-wide rules besides the pinned webhook configurations and APIService and reading Nodes: $bad"
# The live API's user roles (aggregated into view/edit/admin) are for users, never the operator's.
bad=$(awk -F'|' '$1 == "BINDING" && $6 ~ /^rel-r1-pgop-live-(view|edit)$/' "$tmp/ns.rules")
[ -z "$bad" ] || e2e_fail "the live API's user roles are bound to someone: $bad"
for label in aggregate-to-view aggregate-to-edit; do
	grep -q "rbac.authorization.k8s.io/$label: \"true\"" "$tmp/ns.yaml" || e2e_fail "no live API ClusterRole labelled $label"
done
# Everything bound to the operator's ServiceAccount, by role: no built-in role but the
# two an aggregated API server needs (TokenReview/SubjectAccessReview create; the
# front-proxy CA in kube-system/extension-apiserver-authentication).
bound=$(awk -F'|' '$1 == "BINDING" && $7 == "r1-pgop" { print $2 "|" $4 "|" $5 "|" $6 }' "$tmp/ns.rules" | sort -u)
want=$(printf '%s\n' "ClusterRoleBinding||ClusterRole|rel-r1-pgop-live-apiservice" \
	"ClusterRoleBinding||ClusterRole|rel-r1-pgop-nodes" \
	"ClusterRoleBinding||ClusterRole|rel-r1-pgop-webhooks" \
	"ClusterRoleBinding||ClusterRole|system:auth-delegator" \
	"RoleBinding|a|Role|r1-pgop-reconciler" "RoleBinding|b|Role|r1-pgop-reconciler" \
	"RoleBinding|kube-system|Role|extension-apiserver-authentication-reader" \
	"RoleBinding|rel|Role|r1-pgop" | sort -u)
e2e_assert_eq "$want" "$bound" "the roles bound to the operator's ServiceAccount (namespaced mode)"
bad=$(awk -F'|' '$1 == "Role" && $3 != "a" && $3 != "b" && $3 != "rel"' "$tmp/ns.rules")
[ -z "$bad" ] || e2e_fail "namespaced mode: a Role outside the watched and release namespaces: $bad"
bad=$(awk -F'|' '$1 != "BINDING" && $3 == "rel" && $5 == "secrets" && !($7 == "yes" || $6 == "create")' "$tmp/ns.rules")
[ -z "$bad" ] || e2e_fail "namespaced mode: Secret access in the release namespace beyond the certificate Secrets: $bad"
grep -q -- '--watch-namespaces=a,b' "$tmp/ns.yaml" || e2e_fail "the Deployment does not pass --watch-namespaces=a,b"
e2e_log "namespaced: reconciler Roles in a and b only; cluster-wide = webhook configurations by name"

# ---- cluster-wide: one ClusterRole, no reconciler Roles --------------------------------
grep -q '^ClusterRole|rel-r1-pgop|' "$tmp/all.rules" || e2e_fail "cluster-wide mode: no reconciler ClusterRole"
binds "$tmp/all.rules" ClusterRole rel-r1-pgop "" || e2e_fail "cluster-wide ClusterRole is not bound to r1-pgop"
! grep -q '^Role|r1-pgop-reconciler|' "$tmp/all.rules" || e2e_fail "cluster-wide mode renders namespaced reconciler Roles"
e2e_assert_eq "$(scoped "$tmp/ns.rules" | grep '^watched|')" "$(scoped "$tmp/all.rules" | grep '^watched|')" \
	"the same reconciler rules in both modes"

# ---- certificate.mode=secret: no certificate-manager rules ---------------------------
! grep -q '^ClusterRole|rel-r1-pgop-webhooks|' "$tmp/secret.rules" || e2e_fail "mode=secret renders the webhook ClusterRole"
! grep -q '^Role|r1-pgop|rel||secrets|' "$tmp/secret.rules" || e2e_fail "mode=secret renders certificate Secret rules"
binds "$tmp/ns.rules" Role r1-pgop rel || e2e_fail "release Role is not bound to r1-pgop"

# ---- no wildcards, no configmaps, clusters only patched ---------------------------------
all=$(cat "$tmp/ns.rules" "$tmp/all.rules" "$tmp/secret.rules" | grep -v '^BINDING|')
! grep -q '\*' <<<"$all" || e2e_fail "a wildcard in the RBAC: $(grep '\*' <<<"$all" | head -3)"
! grep -q '|configmaps|' <<<"$all" || e2e_fail "configmaps are granted but pgop uses none"
bad=$(awk -F'|' '$5 == "clusters" && $6 ~ /(update|create|delete)/' <<<"$all")
[ -z "$bad" ] || e2e_fail "clusters themselves are writable (only patched, for the restart annotations): $bad"
bad=$(awk -F'|' '$5 == "clusters/status" && $6 ~ /update/' <<<"$all")
[ -z "$bad" ] || e2e_fail "clusters/status update granted (pgop only patches): $bad"

# ---- the README table is exactly what is rendered --------------------------------------
table >"$tmp/table"
[ "$(wc -l <"$tmp/table")" -ge 10 ] || e2e_fail "the RBAC table in $README is missing or unparsable"
cat "$tmp/ns.rules" "$tmp/all.rules" | grep -v '^BINDING|' >"$tmp/both.rules"
scoped "$tmp/both.rules" >"$tmp/rendered"
missing=$(comm -23 "$tmp/rendered" <(sort -u "$tmp/table"))
[ -z "$missing" ] || e2e_fail "rendered rules missing from the README table: $missing"
extra=$(comm -13 "$tmp/rendered" <(sort -u "$tmp/table"))
[ -z "$extra" ] || e2e_fail "README table rows the chart does not render: $extra"
e2e_log "RBAC: $(wc -l <"$tmp/rendered") (scope, resource, verbs) rules, each in the README table"
e2e_log "chart RBAC: all checks passed"
