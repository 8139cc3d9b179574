/*
 * Waits until the Kafka broker at BOOTSTRAP answers a metadata request (the
 * cluster's description through Kafka's own admin client), or TIMEOUT_S
 * passes. Exit status 0 when it answered, 1 when it did not.
 *
 * Usage: java -cp 'lib/*:classes' KafkaReady BOOTSTRAP TIMEOUT_S
 */
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;

public final class KafkaReady {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: KafkaReady BOOTSTRAP TIMEOUT_S");
            System.exit(2);
        }
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
                    if (nodes > 0) {
                        System.out.println("kafka ready: cluster " + id + ", " + nodes + " broker(s)");
                        return;
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
