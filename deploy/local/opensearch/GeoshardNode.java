/*
 * An OpenSearch node for loopback tests and local runs, built the way
 * OpenSearch's own test framework builds its MockNode: a Node subclass whose
 * plugins are classes already on the class path, so no plugin directory, no
 * JarHell check and no bootstrap checks (the node binds loopback only). The
 * subclass is ClasspathNode, one per major line (v2/, v3/), since the two
 * lines name the module plugins and take them in Node's constructor
 * differently; real.sh compiles this file with the one of the line it runs.
 *
 * Usage: java -cp 'lib/*:classes' GeoshardNode HOME HTTP_PORT TRANSPORT_PORT
 *        [NODE_NAME SEED_HOSTS INITIAL_MANAGERS]
 *
 * With three arguments it is a single-node cluster named geoshard-local, its
 * node geoshard-node. With six it is node NODE_NAME (geoshard-1, …) of a
 * cluster named geoshard-cluster, master-eligible and data: it finds the
 * others at SEED_HOSTS (comma-separated host:transport-port) and, on its
 * first start, bootstraps the cluster with the master-eligible nodes named in
 * INITIAL_MANAGERS (comma-separated node names; "-" once the node has data,
 * as OpenSearch asks that the setting go after the first election).
 *
 * HOME holds data/ and logs/; the node prints "geoshard-node started" once its
 * HTTP port answers and closes itself cleanly on SIGTERM.
 */
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;

public final class GeoshardNode {
    private GeoshardNode() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 3 && args.length != 6) {
            System.err.println("usage: GeoshardNode HOME HTTP_PORT TRANSPORT_PORT [NODE_NAME SEED_HOSTS INITIAL_MANAGERS]");
            System.exit(2);
        }
        boolean cluster = args.length == 6;
        String name = cluster ? args[3] : "geoshard-node";
        Path home = Path.of(args[0]).toAbsolutePath();
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));
        Files.createDirectories(home.resolve("config"));

        Settings.Builder builder = Settings.builder()
            .put("cluster.name", cluster ? "geoshard-cluster" : "geoshard-local")
            .put("node.name", name)
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("network.host", "127.0.0.1")
            .put("http.port", args[1])
            .put("transport.port", args[2])
            // The tests share the machine's disk with everything else; a node that
            // turns read-only at 95% would fail them for a reason they do not test.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("http.type", "netty4")
            .put("transport.type", "netty4")
            .put("logger.level", "INFO");
        if (!cluster) {
            builder.put("discovery.type", "single-node");
        } else {
            // Every node master-eligible and data (the default roles, named so
            // that a change of defaults does not change the cluster's shape).
            builder.putList("node.roles", "cluster_manager", "data", "ingest");
            builder.putList("discovery.seed_hosts", args[4].split(","));
            if (!args[5].equals("-")) {
                builder.putList("cluster.initial_cluster_manager_nodes", args[5].split(","));
            }
        }
        Settings settings = builder.build();

        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName(name);
        LogConfigurator.configureWithoutConfig(settings);

        Environment env = InternalSettingsPreparer.prepareEnvironment(
            settings, Map.of(), null, () -> name);
        Node node = ClasspathNode.create(env);

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
            } catch (Exception e) {
                System.err.println("geoshard-node: close: " + e);
            } finally {
                stopped.countDown();
            }
        }, "geoshard-node-shutdown"));

        node.start();
        System.out.println("geoshard-node started: http://127.0.0.1:" + args[1]);
        stopped.await();
    }
}
