// Produces JSON records with the Java Kafka client (the jars of the local broker), so that tests
// read batches compressed exactly as Java producers write them (snappy-java's xerial framing,
// Kafka's LZ4 frames, zstd-jni). Run with the single-file source launcher:
//   java -cp "<kafka lib>/*" JavaProducer.java <brokers> <topic> <gzip|snappy|lz4|zstd> <count> <id prefix>
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaProducer {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", args[0]);
    props.put("compression.type", args[2]);
    props.put("acks", "all");
    // One large batch per partition, so the records really travel compressed together.
    props.put("linger.ms", "50");
    props.put("batch.size", "262144");
    props.put("key.serializer", StringSerializer.class.getName());
    props.put("value.serializer", StringSerializer.class.getName());
    int count = Integer.parseInt(args[3]);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      for (int i = 0; i < count; i++) {
        String id = args[4] + i;
        String value = "{\"id\":\"" + id + "\",\"text\":\"compressed by the Java client, record " + i + "\"}";
        producer.send(new ProducerRecord<>(args[1], id, value));
      }
      producer.flush();
    }
  }
}
