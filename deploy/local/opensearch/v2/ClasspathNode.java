/*
 * The node of the 2.x line: Node's protected constructor takes the plugin
 * classes themselves, and the modules' plugins are named *Plugin.
 */
import java.util.Collection;
import java.util.List;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.env.Environment;
import org.opensearch.index.mapper.MapperExtrasPlugin;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.join.ParentJoinPlugin;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

final class ClasspathNode extends Node {
    private static final List<Class<? extends Plugin>> PLUGINS = List.of(
        Netty4Plugin.class,          // HTTP and transport
        ParentJoinPlugin.class,      // join field, has_parent, has_child, parent_id
        PainlessPlugin.class,        // scripts
        CommonAnalysisPlugin.class,  // the common analyzers and filters
        MapperExtrasPlugin.class,    // scaled_float, rank_feature, search_as_you_type, ...
        ReindexPlugin.class);        // _reindex, _update_by_query, _delete_by_query

    private ClasspathNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
        super(env, plugins, true);
    }

    static Node create(Environment env) {
        return new ClasspathNode(env, PLUGINS);
    }
}
