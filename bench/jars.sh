# Sourced by the bench scripts, from the repository root: JAVA (JAVA_HOME's java, else the one on PATH), JAR (the
# benchmarks jar) and SERVICE (the service jar), each jar built when it is absent.
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
JAR=bench/target/benchmarks.jar
SERVICE=$(ls kv-store-service/target/kv-store-service-*.jar 2>/dev/null | grep -v original | head -1 || true)
[[ -f $JAR ]] || ./mvnw -q -B -ntp -pl bench -am package -DskipTests
[[ -n $SERVICE ]] || { ./mvnw -q -B -ntp -pl kv-store-service -am package -DskipTests; SERVICE=$(ls kv-store-service/target/kv-store-service-*.jar | grep -v original | head -1); }
