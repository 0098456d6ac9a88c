#!/bin/sh
# Runs the reliability tests (lifetimes, storms, faults, restarts and late resolutions, overflow, the subscription's thread,
# monitors, route-, link-, address-, next-hop- and rule-message parsing) under the thread sanitizer and under the
# address sanitizer with LeakSanitizer. Any report fails the run. Called by .ci/run after scripts/test.sh.
#   scripts/sanitizers.sh            both
#   scripts/sanitizers.sh thread     one of them
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
filter='LifetimeTests|StormTests|FaultTests|RestartTests|ConnectionLifetimeTests|OverflowTests|SubscriptionThreadObserverTests|SubscriptionTests|MonitorTests|RouteMessageTests|LinkMessageTests|AddressMessageTests|PathTests|ForeignSenderTests|NexthopObjectTests|NexthopRouteTests|PolicyRuleTests|InternetRuleTests|InternetCarrierTests|ExpiringRouteTests|NamespaceResolverTests|ConcurrentQueueTests|SlowStreamConsumerTests|SharedDirectoryWatchTests|ScopedAddressTests|DefaultRouteIdentityTests|LowerLinkTests|SubscriptionExitTests|ProbeLinkReadsTests|LargeLinkMessageTests|DeliveryBatchTests|ClassificationCacheTests|HostFirstAnswerTests|HostNameAnswerTests|WatchOrderTests|SharedLookupTests|EngineLifetimeTests|CacheChangeTests'
for sanitizer in ${1:-thread address}; do
    scratch=.build-$sanitizer
    log=$(mktemp)
    # The linker's notes on the sanitizer's own symbols are not the package's: shown on failure only.
    if ! swift build --build-tests --traits CommandLineTool,ServiceLifecycle --sanitize="$sanitizer" --scratch-path "$scratch" >"$log" 2>&1; then
        cat "$log" >&2
        exit 1
    fi
    status=0
    # halt_on_error: a race or a memory error fails at once; LSan runs at exit.
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ASAN_OPTIONS="halt_on_error=1 detect_leaks=1" \
    LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp print_suppressions=0" \
        swift test --skip-build --traits CommandLineTool,ServiceLifecycle --sanitize="$sanitizer" --scratch-path "$scratch" --filter "$filter" >"$log" 2>&1 || status=$?
    grep -E "Test run with|WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|SUMMARY:" "$log" || true
    if [ "$status" -ne 0 ] || grep -qE "WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer" "$log"; then
        echo "sanitizer $sanitizer: failed (status $status); the log follows" >&2
        cat "$log" >&2
        rm -f "$log"
        exit 1
    fi
    rm -f "$log"
    echo "sanitizer $sanitizer: no reports"
done
