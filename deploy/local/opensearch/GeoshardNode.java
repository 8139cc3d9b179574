/*
 * A single-node OpenSearch 2.19 for loopback tests and local runs, built the way
 * OpenSearch's own test framework builds its MockNode: a Node subclass whose
 * plugins are classes already on the class path, so no plugin directory, no
 * JarHell check and no bootstrap checks (the node binds loopback only).
 *
 * Usage: java -cp 'lib/*:classes' GeoshardNode HOME HTTP_PORT TRANSPORT_PORT
 *
 * HOME holds data/ and logs/; the node prints "geoshard-node started" once its
 * HTTP port answers and closes itself cleanly on SIGTERM.
 */
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.index.mapper.MapperExtrasPlugin;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.join.ParentJoinPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

public final class GeoshardNode extends Node {
    private static final List<Class<? extends Plugin>> PLUGINS = List.of(
        Netty4Plugin.class,          // HTTP and transport
        ParentJoinPlugin.class,      // join field, has_parent, has_child, parent_id
        PainlessPlugin.class,        // scripts
        CommonAnalysisPlugin.class,  // the common analyzers and filters
        MapperExtrasPlugin.class,    // scaled_float, rank_feature, search_as_you_type, ...
        ReindexPlugin.class);        // _reindex, _update_by_query, _delete_by_query

    private GeoshardNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
        super(env, plugins, true);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: GeoshardNode HOME HTTP_PORT TRANSPORT_PORT");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));
        Files.createDirectories(home.resolve("config"));

        Settings settings = Settings.builder()
            .put("cluster.name", "geoshard-local")
            .put("node.name", "geoshard-node")
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("network.host", "127.0.0.1")
            .put("http.port", args[1])
            .put("transport.port", args[2])
            .put("discovery.type", "single-node")
            // The tests share the machine's disk with everything else; a node that
            // turns read-only at 95% would fail them for a reason they do not test.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("http.type", "netty4")
            .put("transport.type", "netty4")
            .put("logger.level", "INFO")
            .build();

        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName("geoshard-node");
        LogConfigurator.configureWithoutConfig(settings);

        Environment env = InternalSettingsPreparer.prepareEnvironment(
            settings, Map.of(), null, () -> "geoshard-node");
        GeoshardNode node = new GeoshardNode(env, PLUGINS);

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
