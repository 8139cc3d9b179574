/*
 * Waits until the Kafka broker at BOOTSTRAP answers a metadata request (the
 * cluster's description through Kafka's own admin client), or TIMEOUT_S
 * passes. Exit status 0 when it answered, 1 when it did not.
 *
 * With BROKERS (default 1) above 1 it waits, too, until that many brokers are
 * registered and the controller quorum has a leader and that many voters
 * fetching from it: the three-broker cluster of real.sh's cluster profile.
 *
 * Usage: java -cp 'lib/*:classes' KafkaReady BOOTSTRAP TIMEOUT_S [BROKERS]
 */
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.QuorumInfo;

public final class KafkaReady {
    public static void main(String[] args) throws Exception {
        if (args.length != 2 && args.length != 3) {
            System.err.println("usage: KafkaReady BOOTSTRAP TIMEOUT_S [BROKERS]");
            System.exit(2);
        }
        int want = args.length == 3 ? Integer.parseInt(args[2]) : 1;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[1]));
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "2000");
        String last = "no answer";
        try (Admin admin = Admin.create(p)) {
            while (System.nanoTime() < deadline) {
                try {
                    DescribeClusterResult r = admin.describeCluster();
                    int nodes = r.nodes().get(2, TimeUnit.SECONDS).size();
                    String id = r.clusterId().get(2, TimeUnit.SECONDS);
                    if (nodes > 0 && want <= 1) {
                        System.out.println("kafka ready: cluster " + id + ", " + nodes + " broker(s)");
                        return;
                    }
                    if (nodes >= want) {
                        QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(2, TimeUnit.SECONDS);
                        // A broker killed moments ago stays registered until its
                        // session expires; a voter that fetched from the leader in
                        // the last 5 s runs.
                        long now = System.currentTimeMillis();
                        long current = q.voters().stream().filter(v -> v.replicaId() == q.leaderId()
                            || v.lastFetchTimestamp().orElse(0) > now - 5000).count();
                        if (q.leaderId() >= 0 && current >= want) {
                            System.out.println("kafka ready: cluster " + id + ", " + nodes + " brokers, quorum leader "
                                + q.leaderId() + " of " + q.voters().size() + " voters");
                            return;
                        }
                        last = "quorum leader " + q.leaderId() + ", " + current + " of " + q.voters().size()
                            + " voter(s) fetching";
                    } else {
                        last = nodes + " of " + want + " brokers registered";
                    }
                } catch (Exception e) {
                    last = e.toString();
                }
                Thread.sleep(500);
            }
        }
        System.err.println("kafka not ready: " + last);
        System.exit(1);
    }
}
