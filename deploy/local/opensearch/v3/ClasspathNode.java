/*
 * The node of the 3.x line: the modules' plugins are named *ModulePlugin,
 * and Node's protected constructor takes a PluginInfo for each, as 3.x's
 * MockNode gives it one for a plugin on the class path.
 */
import java.util.List;

import org.opensearch.Version;
import org.opensearch.analysis.common.CommonAnalysisModulePlugin;
import org.opensearch.env.Environment;
import org.opensearch.index.mapper.MapperExtrasModulePlugin;
import org.opensearch.index.reindex.ReindexModulePlugin;
import org.opensearch.join.ParentJoinModulePlugin;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessModulePlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.PluginInfo;
import org.opensearch.transport.Netty4ModulePlugin;

final class ClasspathNode extends Node {
    private static final List<Class<? extends Plugin>> PLUGINS = List.of(
        Netty4ModulePlugin.class,          // HTTP and transport
        ParentJoinModulePlugin.class,      // join field, has_parent, has_child, parent_id
        PainlessModulePlugin.class,        // scripts
        CommonAnalysisModulePlugin.class,  // the common analyzers and filters
        MapperExtrasModulePlugin.class,    // scaled_float, rank_feature, search_as_you_type, ...
        ReindexModulePlugin.class);        // _reindex, _update_by_query, _delete_by_query

    private ClasspathNode(Environment env, List<PluginInfo> plugins) {
        super(env, plugins, true);
    }

    static Node create(Environment env) {
        List<PluginInfo> infos = PLUGINS.stream()
            .map(c -> new PluginInfo(c.getName(), "classpath plugin", "NA", Version.CURRENT,
                Runtime.version().feature() + "", c.getName(), List.of(), false))
            .toList();
        return new ClasspathNode(env, infos);
    }
}
