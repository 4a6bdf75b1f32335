// Kafka's Java admin client against a broker: describeCluster and describeTopics, printed one fact a line so the
// test (test_cluster_tools.py) can compare Samsa's answers with Apache Kafka's. Run as a single-file program:
//   java -cp '.cache/kafka/4.4.0/*' tests/apache_kafka/AdminProbe.java BOOTSTRAP TOPIC...

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AclOperation;

public class AdminProbe {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        List<String> topics = Arrays.asList(args).subList(1, args.length);
        try (Admin admin = Admin.create(props)) {
            DescribeClusterResult cluster =
                admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true));
            System.out.println("clusterId " + cluster.clusterId().get());
            System.out.println("controller " + node(cluster.controller().get()));
            List<Node> nodes = cluster.nodes().get().stream()
                .sorted(Comparator.comparingInt(Node::id)).collect(Collectors.toList());
            for (Node node : nodes) {
                System.out.println("node " + node(node));
            }
            System.out.println("clusterOperations " + sorted(cluster.authorizedOperations().get()));
            Map<String, TopicDescription> described =
                admin.describeTopics(topics, new DescribeTopicsOptions().includeAuthorizedOperations(true))
                    .allTopicNames().get();
            for (String topic : topics) {
                TopicDescription description = described.get(topic);
                System.out.println("topic " + description.name() + " id " + description.topicId()
                    + " internal " + description.isInternal()
                    + " operations " + sorted(description.authorizedOperations()));
                for (TopicPartitionInfo partition : description.partitions()) {
                    System.out.println("  partition " + partition.partition()
                        + " leader " + partition.leader().id()
                        + " replicas " + ids(partition.replicas())
                        + " isr " + ids(partition.isr()));
                }
            }
        }
    }

    private static String sorted(Set<AclOperation> operations) {
        return operations == null ? "null" : new TreeSet<>(operations).toString();
    }

    private static String node(Node node) {
        return node.id() + " " + node.host() + ":" + node.port() + " rack " + node.rack();
    }

    private static List<Integer> ids(List<Node> nodes) {
        return nodes.stream().map(Node::id).collect(Collectors.toList());
    }
}
